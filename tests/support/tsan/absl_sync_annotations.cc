// ThreadSanitizer build only (GCOMPUTE_TSAN): tells TSan about abseil's synchronization (and
// about std::timed_mutex's timed lock, at the end).
//
// Debian's libabsl_synchronization is not built with -fsanitize=thread, so its Mutex, CondVar
// and Notification establish no happens-before edge that TSan can see, and every access guarded
// by an absl::Mutex would be reported as a race. These definitions, linked into each test
// executable, take precedence over the shared library's: each calls the library's own function
// (found with dlsym(RTLD_NEXT)) and adds the edge it implies: a release on the Mutex (or
// Notification) before it is given up, an acquire after it is taken. Reader locks use the same
// edges, so TSan orders readers of one Mutex among themselves too (it may miss a write made
// under a reader lock, never report a race that is not there).
#include <absl/synchronization/mutex.h>
#include <absl/synchronization/notification.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

#define GCOMPUTE_STRINGIZE_INNER(x) #x
#define GCOMPUTE_STRINGIZE(x) GCOMPUTE_STRINGIZE_INNER(x)

// The library's definition of absl::<ns>::<tail>, where tail is the Itanium mangling after the
// inline namespace, e.g. "5Mutex4LockEv"; prefix is "_ZN" or "_ZNK" (const member).
template <typename Fn>
Fn library_function(const char* prefix, const char* tail) {
  const std::string ns = GCOMPUTE_STRINGIZE(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name = std::string(prefix) + "4absl" + std::to_string(ns.size()) + ns + tail;
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "absl_sync_annotations: %s not found: %s\n", name.c_str(), dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

void acquired(const void* sync) {
  __tsan_acquire(const_cast<void*>(sync));
}
void releasing(const void* sync) {
  __tsan_release(const_cast<void*>(sync));
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const auto real = library_function<void (*)(Mutex*)>("_ZN", "5Mutex4LockEv");
  real(this);
  acquired(this);
}

void Mutex::Unlock() {
  static const auto real = library_function<void (*)(Mutex*)>("_ZN", "5Mutex6UnlockEv");
  releasing(this);
  real(this);
}

bool Mutex::TryLock() {
  static const auto real = library_function<bool (*)(Mutex*)>("_ZN", "5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) acquired(this);
  return locked;
}

void Mutex::ReaderLock() {
  static const auto real = library_function<void (*)(Mutex*)>("_ZN", "5Mutex10ReaderLockEv");
  real(this);
  acquired(this);
}

void Mutex::ReaderUnlock() {
  static const auto real = library_function<void (*)(Mutex*)>("_ZN", "5Mutex12ReaderUnlockEv");
  releasing(this);
  real(this);
}

bool Mutex::ReaderTryLock() {
  static const auto real = library_function<bool (*)(Mutex*)>("_ZN", "5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) acquired(this);
  return locked;
}

void Mutex::LockWhen(const Condition& cond) {
  static const auto real = library_function<void (*)(Mutex*, const Condition&)>(
      "_ZN", "5Mutex8LockWhenERKNS0_9ConditionE");
  real(this, cond);
  acquired(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto real = library_function<void (*)(Mutex*, const Condition&)>(
      "_ZN", "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  real(this, cond);
  acquired(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = library_function<bool (*)(Mutex*, const Condition&, Duration)>(
      "_ZN", "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  const bool met = real(this, cond, timeout);
  acquired(this);  // held on return either way
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = library_function<bool (*)(Mutex*, const Condition&, Time)>(
      "_ZN", "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const bool met = real(this, cond, deadline);
  acquired(this);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = library_function<bool (*)(Mutex*, const Condition&, Duration)>(
      "_ZN", "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  const bool met = real(this, cond, timeout);
  acquired(this);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = library_function<bool (*)(Mutex*, const Condition&, Time)>(
      "_ZN", "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const bool met = real(this, cond, deadline);
  acquired(this);
  return met;
}

// Await* may give the Mutex up while it waits and takes it again before returning.
void Mutex::Await(const Condition& cond) {
  static const auto real =
      library_function<void (*)(Mutex*, const Condition&)>("_ZN", "5Mutex5AwaitERKNS0_9ConditionE");
  releasing(this);
  real(this, cond);
  acquired(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = library_function<bool (*)(Mutex*, const Condition&, Duration)>(
      "_ZN", "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  releasing(this);
  const bool met = real(this, cond, timeout);
  acquired(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = library_function<bool (*)(Mutex*, const Condition&, Time)>(
      "_ZN", "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  releasing(this);
  const bool met = real(this, cond, deadline);
  acquired(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  static const auto real =
      library_function<void (*)(CondVar*, Mutex*)>("_ZN", "7CondVar4WaitEPNS0_5MutexE");
  releasing(mu);
  real(this, mu);
  acquired(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto real = library_function<bool (*)(CondVar*, Mutex*, Duration)>(
      "_ZN", "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  releasing(mu);
  const bool timed_out = real(this, mu, timeout);
  acquired(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto real = library_function<bool (*)(CondVar*, Mutex*, Time)>(
      "_ZN", "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  releasing(mu);
  const bool timed_out = real(this, mu, deadline);
  acquired(mu);
  return timed_out;
}

void Notification::Notify() {
  static const auto real =
      library_function<void (*)(Notification*)>("_ZN", "12Notification6NotifyEv");
  releasing(this);
  real(this);
}

void Notification::WaitForNotification() const {
  static const auto real = library_function<void (*)(const Notification*)>(
      "_ZNK", "12Notification19WaitForNotificationEv");
  real(this);
  acquired(this);
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static const auto real = library_function<bool (*)(const Notification*, Duration)>(
      "_ZNK", "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  const bool notified = real(this, timeout);
  if (notified) acquired(this);
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static const auto real = library_function<bool (*)(const Notification*, Time)>(
      "_ZNK", "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  const bool notified = real(this, deadline);
  if (notified) acquired(this);
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl

// GCC 12's TSan runtime has no interceptor for pthread_mutex_clocklock, which libstdc++ uses for
// std::timed_mutex::try_lock_for (kernels/cpu/lapack_gate.cc): TSan would miss the lock and
// report its unlock as "unlock of an unlocked mutex". This definition, taking precedence over
// glibc's for the test executable, reports the lock attempt through TSan's mutex annotations.
extern "C" int pthread_mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock,
                                       const struct timespec* abstime) {
  using Fn = int (*)(pthread_mutex_t*, clockid_t, const struct timespec*);
  static const auto real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_mutex_clocklock"));
  if (real == nullptr) {
    std::fprintf(stderr, "absl_sync_annotations: pthread_mutex_clocklock not found: %s\n",
                 dlerror());
    std::abort();
  }
  __tsan_mutex_pre_lock(mutex, __tsan_mutex_try_lock);
  const int rc = real(mutex, clock, abstime);
  __tsan_mutex_post_lock(mutex, rc == 0 ? __tsan_mutex_try_lock : __tsan_mutex_try_lock_failed, 0);
  return rc;
}
