// taot_set_launch_observer: installs a copy of the caller's observer for every later launch.
#include "observer.h"

#include <deque>
#include <mutex>

extern "C" void taot_set_launch_observer(const taot_launch_observer* observer) {
  static std::mutex mutex;
  static std::deque<taot_launch_observer> installed;  // never freed: a launch may still read one
  std::lock_guard<std::mutex> lock(mutex);
  if (observer == nullptr) {
    taot::detail::launch_observer.store(nullptr, std::memory_order_release);
    return;
  }
  installed.push_back(*observer);
  taot::detail::launch_observer.store(&installed.back(), std::memory_order_release);
}
