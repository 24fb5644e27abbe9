// How a trainer meets the signals that ask it to stop (SIGINT: Ctrl-C;
// SIGTERM: kill and schedulers; SIGHUP: a closed terminal; SIGUSR1 and
// SIGUSR2: a batch system's warning before the end of a job's time, as
// Slurm's --signal sends): never a silent death. Each stage of a run has
// its handler, and each says in one line on stderr what happened:
//
//   kStartUp    before training: the program ends at once,
//               "<program>: stopped by SIGINT during start-up; nothing was
//               trained";
//   kEndNow     training without a checkpoint folder: the program ends at
//               once, "<program>: stopped by SIGINT during training; no
//               checkpoint (pass --checkpoint_dir to keep one)";
//   kAfterStep  training with one: the first signal is recorded
//               (StopRequested) and the loop stops after its step, writes
//               the checkpoint and says so; a second ends the program at
//               once, "<program>: a second SIGINT: ended at once, without a
//               checkpoint of this step (the last one written stays)".
//
// A program ended at once dies of the signal itself (the shell reports
// 128 + its number). The handlers only write(2) a line prepared
// beforehand and re-raise: nothing else is safe in a signal handler.
#ifndef RINGLET_TRAINERS_COMMON_LOOP_STOP_SIGNALS_H_
#define RINGLET_TRAINERS_COMMON_LOOP_STOP_SIGNALS_H_

#include <csignal>
#include <string>
#include <vector>

namespace ringlet::trainers {

enum class StopMode { kStartUp, kEndNow, kAfterStep };

// Installs `mode`'s handlers for every stop signal; `speak` false (the
// processes of a job other than the first) ends or stops without the line.
void HandleStopSignals(const std::string& program, StopMode mode,
                       bool speak = true);

// The signal kAfterStep recorded, 0 before one.
const volatile std::sig_atomic_t* StopRequested();

// SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2.
const std::vector<int>& StopSignals();

// "SIGINT"; "signal N" for others.
std::string SignalName(int signal);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_LOOP_STOP_SIGNALS_H_
