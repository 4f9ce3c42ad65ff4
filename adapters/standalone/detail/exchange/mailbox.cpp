#include "csgi/adapters/standalone/detail/exchange/mailbox.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace csgi::standalone::detail {

Mailbox::Mailbox(boost::asio::io_context& ioc, std::shared_ptr<ErrorStream> errors)
    : ioc_(&ioc), errors_(std::move(errors)), efd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  int mine = efd_ >= 0 ? ::fcntl(efd_, F_DUPFD_CLOEXEC, 0) : -1;
  if (mine < 0) return;  // no eventfd: posts go through asio::post
  boost::system::error_code ec;
  wait_.emplace(ioc);
  wait_->assign(mine, ec);
  if (ec) {
    ::close(mine);
    wait_.reset();
    return;
  }
  waiting_ = true;
  arm();  // before the io thread runs: nothing else uses the descriptor yet
}

Mailbox::~Mailbox() {
  if (efd_ >= 0) ::close(efd_);
}

bool Mailbox::on_io_thread() {
  std::lock_guard lock(mu_);
  return ioc_ && ioc_->get_executor().running_in_this_thread();
}

void Mailbox::wake() noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(efd_, &one, sizeof one);  // EAGAIN only past 2^64-2 unread: still readable
}

void Mailbox::arm() {
  wait_->async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    if (!ec) drain();
  });
}

void Mailbox::drain() {
  std::uint64_t n;
  [[maybe_unused]] ssize_t r = ::read(efd_, &n, sizeof n);  // before taking the queue: a later post wakes again
  Tasks batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(queue_);
    signaled_ = false;
    if (!waiting_) return;
  }
  arm();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    try {
      batch[i]->run();
    } catch (...) {
      // As from an asio handler, the exception goes to the io thread's last line of defence; what was
      // posted after the failing task still runs, in order, before what came since.
      std::unique_lock lock(mu_);
      queue_.insert(queue_.begin(), std::make_move_iterator(batch.begin() + static_cast<std::ptrdiff_t>(i) + 1),
                    std::make_move_iterator(batch.end()));
      bool signal = !queue_.empty() && !signaled_;
      if (signal) signaled_ = true;
      lock.unlock();
      if (signal) wake();
      throw;
    }
  }
}

void Mailbox::finishing() {
  Tasks left;
  {
    std::lock_guard lock(mu_);
    if (!waiting_ || !ioc_) return;
    waiting_ = false;
    left.swap(queue_);
    for (auto& t : left) boost::asio::post(*ioc_, [t = std::shared_ptr<Task>(std::move(t))] { t->run(); });
  }
  boost::system::error_code ec;
  wait_->close(ec);  // the wait ends (aborted): nothing of the mailbox keeps the io_context running
}

void Mailbox::close() noexcept {
  Tasks left;  // destroyed after the lock: what they hold may post again (and be refused)
  {
    std::lock_guard lock(mu_);
    ioc_ = nullptr;
    waiting_ = false;
    left.swap(queue_);
  }
  boost::system::error_code ec;
  if (wait_) wait_->close(ec);
  wait_.reset();
}

}  // namespace csgi::standalone::detail
