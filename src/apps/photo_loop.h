// The photos a vision command reads (files as named, a folder standing for
// the images in it) and the loop over them: in batches, the next batch read
// and prepared on a second thread while the current one runs, with a
// progress line and the rate at the end.
#pragma once
#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <vector>

namespace kestrel::cli {

// The images named: files as given, a folder as its .jpg, .jpeg, .png and
// .bmp files in name order. A missing file or an imageless folder fails.
std::vector<std::string> photo_paths(const std::vector<std::string>& args);
// Where a photo's annotated copy goes: DIR/NAME.png ("" without a folder).
std::string annotated_path(const std::string& out_dir, const std::string& photo);

// The progress line of a loop over `total` photos and, at finish(), the
// images per second on stderr, with the first batch apart from the rest: it
// carries the session's first-run work (pipelines built, a fused encoder
// checked on the CPU, float16 calibrated), which later batches do not.
class PhotoProgress {
 public:
  PhotoProgress(std::string what, size_t total);
  void done(size_t photos);  // so many are handled
  void finish() const;

 private:
  std::string what_;
  size_t total_, first_batch_ = 0;
  std::chrono::steady_clock::time_point t0_, first_done_;
};

// Calls handle(first, items) for the photos in batches of up to `batch`
// (items[k] = prepare(photos[first + k])). The next batch's prepare calls
// (decoding the photo, fitting it to the model) run on a second thread while
// `handle` runs the model on the current one. An error in either ends the
// loop with that error, once the other thread is done.
template <typename T>
void for_each_photo(const std::vector<std::string>& photos, const std::string& what, size_t batch,
                    const std::function<T(const std::string& path)>& prepare,
                    const std::function<void(size_t first, std::vector<T>& items)>& handle) {
  batch = std::max<size_t>(batch, 1);
  auto prepare_batch = [&](size_t first) {
    std::vector<T> items;
    for (size_t i = first; i < std::min(first + batch, photos.size()); ++i) items.push_back(prepare(photos[i]));
    return items;
  };
  PhotoProgress progress(what, photos.size());
  std::future<std::vector<T>> next = std::async(std::launch::async, prepare_batch, size_t(0));
  for (size_t first = 0; first < photos.size(); first += batch) {
    std::vector<T> items = next.get();
    if (first + batch < photos.size()) next = std::async(std::launch::async, prepare_batch, first + batch);
    handle(first, items);
    progress.done(first + items.size());
  }
  progress.finish();
}

}  // namespace kestrel::cli
