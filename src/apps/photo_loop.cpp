#include "apps/photo_loop.h"

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "apps/cli.h"
#include "core/error.h"

namespace kestrel::cli {

std::vector<std::string> photo_paths(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& a : args) {
    if (!fs::is_directory(a)) {
      KESTREL_CHECK_AS(ErrorKind::NoSuchFile, fs::exists(a), "image '", a, "' does not exist");
      out.push_back(a);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(a)) {
      std::string ext = e.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
      if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp"))
        found.push_back(e.path().string());
    }
    KESTREL_CHECK_AS(ErrorKind::InvalidArgument, !found.empty(), "folder '", a, "' holds no .jpg, .jpeg, .png or .bmp image");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::string annotated_path(const std::string& out_dir, const std::string& photo) {
  namespace fs = std::filesystem;
  return out_dir.empty() ? "" : (fs::path(out_dir) / (fs::path(photo).stem().string() + ".png")).string();
}

PhotoProgress::PhotoProgress(std::string what, size_t total)
    : what_(std::move(what)), total_(total), t0_(std::chrono::steady_clock::now()) {}

void PhotoProgress::done(size_t photos) {
  if (first_batch_ == 0) {
    first_batch_ = photos;
    first_done_ = std::chrono::steady_clock::now();
  }
  std::fflush(stdout);
  progress(what_, int(photos), int(total_));
}

void PhotoProgress::finish() const {
  using seconds = std::chrono::duration<double>;
  const auto now = std::chrono::steady_clock::now();
  const double s = seconds(now - t0_).count();
  std::fprintf(stderr, "%zu images in %.2f s: %.1f images/s", total_, s, double(total_) / s);
  if (first_batch_ > 0 && first_batch_ < total_) {
    const double rest = seconds(now - first_done_).count();
    std::fprintf(stderr, " (the first %zu in %.2f s, the other %zu at %.1f images/s)", first_batch_,
                 seconds(first_done_ - t0_).count(), total_ - first_batch_, double(total_ - first_batch_) / rest);
  }
  std::fprintf(stderr, "\n");
}

}  // namespace kestrel::cli
