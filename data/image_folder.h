// torchvision's ImageFolder: ROOT/<class>/<image> with .png, .jpg or .jpeg
// images (any case), a class per subfolder, ids in the sorted order of the
// folders' names, images sorted by name within each. Decoded once, on
// every core, into memory (uint8, channels first): one size for all
// (checked: resize them beforehand), gray kept as one channel unless some
// image has colour, then every image RGB.
#ifndef RINGLET_DATA_IMAGE_FOLDER_H_
#define RINGLET_DATA_IMAGE_FOLDER_H_

#include <string>
#include <vector>

#include "data/array.h"

namespace ringlet::data {

struct ImageFolder {
  std::vector<std::string> classes;  // The subfolders' names, sorted.
  Array images;                      // uint8 [n, channels, height, width]
  Array targets;                     // int32 [n]: the class ids
  int64_t files = 0;                 // Images read (n).
  std::vector<std::string> paths;    // Each image's file, in order.
};

// Reads the split at `root`. With `classes` not empty (a training split's),
// the split's folders must be among them and take their ids (a class with
// no folder here has no samples). Throws DataError naming the file or
// folder and what is wrong: no class folders, a class with no images, a
// file that is neither PNG nor JPEG or is damaged, another size, more
// bytes than the host's free memory; `channels` 3 reads every image as RGB.
ImageFolder ReadImageFolder(const std::string& root,
                            const std::vector<std::string>& classes = {},
                            int channels = 0);

// Unlabelled images (a model's inputs for predictions): the PNG or JPEG
// file at `path`, or every such file in the folder `path` (sorted by name,
// not its subfolders), decoded as ReadImageFolder's (targets all 0, no
// classes). Throws DataError as it does, and for a folder with no image.
ImageFolder ReadImages(const std::string& path, int channels = 0);

// Whether a file name ends in .png, .jpg or .jpeg, in any case.
bool IsImageFileName(const std::string& name);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_IMAGE_FOLDER_H_
