#pragma once
/// Facts about the running process that per-process state (threads, inotify descriptors, caches) checks
/// to notice it now lives in a forked child.
namespace csgi {

/// How many fork()s happened in this process and its ancestors since the first call (in this process
/// or an ancestor): a value read before a fork differs in the child. One relaxed atomic load.
unsigned fork_generation() noexcept;

}  // namespace csgi
