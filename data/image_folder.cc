#include "data/image_folder.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "data/data_error.h"
#include "data/image_decode.h"
#include "host/memory.h"

namespace ringlet::data {
namespace fs = std::filesystem;

bool IsImageFileName(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  for (const char* ending : {".png", ".jpg", ".jpeg"}) {
    const size_t n = std::strlen(ending);
    if (lower.size() > n && lower.compare(lower.size() - n, n, ending) == 0) {
      return true;
    }
  }
  return false;
}

namespace {

// The entries of `dir` that are folders (dirs) or image files (not),
// sorted by name, hidden ones (".name") left out.
std::vector<std::string> Entries(const std::string& dir, bool dirs) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) {
    throw DataError(dir + ": cannot list the folder (" + ec.message() + ")");
  }
  for (; it != end; it.increment(ec)) {
    if (ec) {
      throw DataError(dir + ": cannot list the folder (" + ec.message() + ")");
    }
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code type_ec;
    const bool is_dir = it->is_directory(type_ec);
    if (dirs ? is_dir : (!is_dir && IsImageFileName(name)))
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<uint8_t> FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  if (in.bad()) throw DataError(path + ": read error");
  return bytes;
}

struct Listing {
  std::vector<std::string> paths;
  std::vector<int32_t> ids;
};

Listing ListImages(const std::string& root,
                   const std::vector<std::string>& folders,
                   const std::vector<std::string>& classes) {
  std::map<std::string, int32_t> id_of;
  for (size_t k = 0; k < classes.size(); ++k) {
    id_of[classes[k]] = static_cast<int32_t>(k);
  }
  Listing listing;
  for (const std::string& folder : folders) {
    const auto id = id_of.find(folder);
    if (id == id_of.end()) {
      std::string known;
      for (size_t k = 0; k < classes.size() && k < 10; ++k) {
        known += (k ? ", " : "") + classes[k];
      }
      throw DataError(root + "/" + folder + ": class '" + folder +
                      "' is not among the training split's (" + known +
                      (classes.size() > 10 ? ", ..." : "") + ")");
    }
    const std::vector<std::string> files = Entries(root + "/" + folder, false);
    if (files.empty()) {
      throw DataError(root + "/" + folder +
                      ": a class folder with no .png, .jpg or .jpeg image");
    }
    for (const std::string& f : files) {
      listing.paths.push_back(root + "/" + folder + "/" + f);
      listing.ids.push_back(id->second);
    }
  }
  return listing;
}

// Decodes every image into `out` (n images of `first`'s size and
// `channels`) on every core. Returns false, having stopped early, when an
// image has colour though `channels` is 1: the caller reads them as RGB.
bool DecodeAll(const std::vector<std::string>& paths, const DecodedImage& first,
               int64_t channels, uint8_t* out) {
  const int64_t n = static_cast<int64_t>(paths.size());
  const int64_t image_bytes = channels * first.height * first.width;
  std::atomic<int64_t> next{0};
  std::atomic<bool> colour{false};
  std::mutex mu;
  int64_t failed_at = n;
  std::exception_ptr failure;
  auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n && !colour;) {
      try {
        const std::vector<uint8_t> bytes = FileBytes(paths[i]);
        const DecodedImage image = DecodeImage(bytes.data(), bytes.size(),
                                               paths[i], channels == 3 ? 3 : 0);
        if (image.channels != channels) {
          colour = true;
          return;
        }
        if (image.height != first.height || image.width != first.width) {
          throw DataError(
              paths[i] + " is " + std::to_string(image.width) + "x" +
              std::to_string(image.height) + " pixels, " + paths[0] + " " +
              std::to_string(first.width) + "x" + std::to_string(first.height) +
              ": an image folder's images must be one size; resize them "
              "first (e.g. PIL's Image.resize)");
        }
        std::memcpy(out + i * image_bytes, image.pixels.data(),
                    image.pixels.size());
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < failed_at) {
          failed_at = i;
          failure = std::current_exception();
        }
      }
    }
  };
  const int threads = static_cast<int>(std::clamp<int64_t>(
      std::thread::hardware_concurrency(), 1, std::min<int64_t>(n, 16)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return !colour;
}

// The listed images decoded into one array (see ReadImageFolder).
ImageFolder Decode(const std::string& where, const Listing& listing,
                   int channels) {
  ImageFolder out;
  const int64_t n = static_cast<int64_t>(listing.paths.size());
  const std::vector<uint8_t> bytes = FileBytes(listing.paths[0]);
  const DecodedImage first =
      DecodeImage(bytes.data(), bytes.size(), listing.paths[0], channels);
  for (int64_t c : {first.channels, int64_t{3}}) {
    if (c < first.channels) continue;
    const int64_t total = n * c * first.height * first.width;
    const std::string shortfall = host::HostMemoryShortfall(total);
    if (!shortfall.empty()) {
      throw DataError(where + ": " + std::to_string(n) + " images of " +
                      std::to_string(c) + "x" + std::to_string(first.height) +
                      "x" + std::to_string(first.width) + " need " +
                      host::FormatBytes(total) + ", but " + shortfall);
    }
    out.images.type = ElementType::kUint8;
    out.images.dims = {n, c, first.height, first.width};
    out.images.bytes.assign(static_cast<size_t>(total), 0);
    if (DecodeAll(listing.paths, first, c, out.images.bytes.data())) break;
  }
  out.targets.type = ElementType::kInt32;
  out.targets.dims = {n};
  out.targets.bytes.resize(static_cast<size_t>(n) * sizeof(int32_t));
  std::memcpy(out.targets.bytes.data(), listing.ids.data(),
              out.targets.bytes.size());
  out.files = n;
  out.paths = listing.paths;
  return out;
}

}  // namespace

ImageFolder ReadImageFolder(const std::string& root,
                            const std::vector<std::string>& classes,
                            int channels) {
  const std::vector<std::string> folders = Entries(root, true);
  if (folders.empty()) {
    throw DataError(root +
                    ": no class folders; an image folder holds one folder "
                    "of .png or .jpg images per class (ROOT/cat/1.png, ...)");
  }
  const std::vector<std::string> names = classes.empty() ? folders : classes;
  ImageFolder out = Decode(root, ListImages(root, folders, names), channels);
  out.classes = names;
  return out;
}

ImageFolder ReadImages(const std::string& path, int channels) {
  Listing listing;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const std::string& f : Entries(path, false)) {
      listing.paths.push_back(path + "/" + f);
    }
    if (listing.paths.empty()) {
      throw DataError(path + ": a folder with no .png, .jpg or .jpeg image");
    }
  } else {
    listing.paths.push_back(path);
  }
  listing.ids.assign(listing.paths.size(), 0);
  return Decode(path, listing, channels);
}

}  // namespace ringlet::data
