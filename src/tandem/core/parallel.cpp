#include "tandem/core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>

#include "tandem/core/error.h"

namespace tandem {
namespace {
std::atomic<int> g_threads{0};
thread_local int t_thread_limit = 0;  // 0: no per-thread limit (see ThreadLimitGuard)
// OpenMP's own default honours OMP_NUM_THREADS, else the number of cores.
int default_threads() { return std::max(1, omp_get_max_threads()); }
}  // namespace

int get_num_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  n = n > 0 ? n : default_threads();
  return t_thread_limit > 0 ? std::min(n, t_thread_limit) : n;
}

ThreadLimitGuard::ThreadLimitGuard(int n) : prev_limit_(t_thread_limit), prev_omp_(omp_get_max_threads()) {
  TANDEM_CHECK(n >= 1, ValueError, "ThreadLimitGuard", "got ", n, ", expected a positive number of threads");
  t_thread_limit = n;
  omp_set_num_threads(std::min(n, prev_omp_));  // per-thread ICV: oneDNN calls from here obey it too
}

ThreadLimitGuard::~ThreadLimitGuard() {
  t_thread_limit = prev_limit_;
  omp_set_num_threads(prev_omp_);
}

void set_num_threads(int n) {
  TANDEM_CHECK(n >= 1 && n <= kMaxThreads, ValueError, "set_num_threads", "got ", n,
               ", expected a number of threads in [1, ", kMaxThreads, "]");
  g_threads.store(n);
  omp_set_num_threads(n);
}

bool in_parallel_region() { return omp_in_parallel() != 0; }

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (begin >= end) return;
  int64_t n = end - begin;
  int threads = get_num_threads();
  if (threads <= 1 || n < grain || in_parallel_region()) {
    f(begin, end);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  chunks = std::max<int64_t>(chunks, 1);
  std::exception_ptr err;
  std::atomic<bool> failed{false};
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t lo = begin + n * c / chunks, hi = begin + n * (c + 1) / chunks;
    try {
      f(lo, hi);
    } catch (...) {
      // Exceptions must not escape an OpenMP region; keep the first and rethrow after.
      if (!failed.exchange(true)) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace tandem
