#pragma once
// Intra-op parallelism. tandem uses OpenMP, the same runtime oneDNN uses, so the library
// and tandem's own loops share one thread pool and never fight over the cores
// (FACTS.md: two busy-waiting pools cost PyTorch ~3x on this machine).
#include <cstdint>
#include <functional>

namespace tandem {

/// Threads used by intra-op parallel loops (and by oneDNN). Default: hardware cores.
int get_num_threads();
/// Most threads set_num_threads accepts. Far more than any machine has cores; beyond a few
/// tens of thousands, OpenMP's team start overflows the stack and the process crashes.
inline constexpr int kMaxThreads = 4096;
/// Sets the thread count for subsequent ops; ValueError if n < 1 or n > kMaxThreads.
void set_num_threads(int n);
/// Caps the intra-op threads of the calling thread only, while alive (restoring the
/// previous cap on destruction): ops, tandem's loops and oneDNN started from this thread
/// use at most n threads. Background threads (DataLoader's prefetch thread runs with 1,
/// like PyTorch's DataLoader workers) use it so they do not start a second thread pool
/// that fights the training ops for the cores. ValueError if n < 1.
class ThreadLimitGuard {
 public:
  explicit ThreadLimitGuard(int n);
  ~ThreadLimitGuard();
  ThreadLimitGuard(const ThreadLimitGuard&) = delete;
  ThreadLimitGuard& operator=(const ThreadLimitGuard&) = delete;

 private:
  int prev_limit_, prev_omp_;
};

/// True while running inside a parallel region (nested regions run serially).
bool in_parallel_region();

/// Work below this many elements stays on one thread: spinning up threads costs ~microseconds.
inline constexpr int64_t kGrainSize = 32768;

/// Calls f(chunk_begin, chunk_end) over [begin, end) split into contiguous chunks, one per
/// thread, when (end - begin) >= grain and more than one thread is available; otherwise
/// calls f(begin, end) once on the calling thread. Chunk boundaries depend only on the
/// range and thread count, so results are reproducible.
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

}  // namespace tandem
