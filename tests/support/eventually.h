#pragma once
// Waiting on asynchronous controllers, informers and servers in tests.

#include <chrono>
#include <thread>

namespace unitrain::testing {

// Polls `pred` until it holds or `timeout` passes and returns whether it held. Tests wait for
// a state this way, never for a fixed time: the wait is as short as the machine allows and a
// loaded machine (sanitizers, parallel ctest) only makes it longer, not flaky.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(poll);
  }
  return pred();
}

}  // namespace unitrain::testing
