#include "collectives/nccl.h"
