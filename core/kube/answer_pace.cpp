#include "core/kube/answer_pace.h"

#include <algorithm>

namespace unitrain::kube {

AnswerPace::Duration AnswerPace::hold(Duration per_request, size_t answers_left) {
  if (answers_left < 2) return Duration::zero();
  return std::min(per_request * static_cast<Duration::rep>(answers_left), kMaxHold);
}

std::string AnswerPace::key_of(std::string_view target) {
  target = target.substr(0, target.find('?'));
  constexpr std::string_view kNamespaces = "/namespaces/";
  const size_t at = target.find(kNamespaces);
  if (at == std::string_view::npos) return std::string(target);
  const size_t name = at + kNamespaces.size();
  const size_t end = std::min(target.find('/', name), target.size());
  if (end == target.size()) return std::string(target);  // a namespace itself
  std::string key;
  key.reserve(target.size());
  key.append(target.substr(0, name)).append("*").append(target.substr(end));
  return key;
}

AnswerPace::Duration AnswerPace::per_request(std::string_view target) const {
  const std::string key = key_of(target);
  std::lock_guard lock(mu_);
  auto it = per_request_.find(key);
  return it == per_request_.end() ? Duration::zero() : it->second;
}

void AnswerPace::observe(std::string_view target, size_t n, Duration took, bool short_hold) {
  if (n < 2 || took <= Duration::zero()) return;
  const Duration measured = std::min(took / static_cast<Duration::rep>(n), kMaxPerRequest);
  std::string key = key_of(target);
  std::lock_guard lock(mu_);
  auto it = per_request_.find(key);
  if (it == per_request_.end()) {
    if (per_request_.size() >= kMaxTargets) per_request_.clear();
    per_request_.emplace(std::move(key), measured);
    return;
  }
  Duration& per = it->second;
  if (short_hold) {
    // The server's time, measured (longer than the hold): halfway there, so that one slow
    // exchange does not double the next hold.
    per = (per + measured) / 2;
  } else {
    per -= per / 8;
  }
}

}  // namespace unitrain::kube
