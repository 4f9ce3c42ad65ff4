#pragma once
// Where the app's threads post to an io thread (Mailbox).
#include <memory>
#include <mutex>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "csgi/core/io.hpp"

namespace csgi::standalone::detail {

/// Where the app's threads post to an io thread (a delayed response's Responder and Writer hold it, so it
/// outlives the io thread). Closed when the io thread goes: from then on a post is dropped and says so.
/// It also keeps the env's csgi.errors, which the app may use until it has answered.
class Mailbox {
public:
  Mailbox(boost::asio::io_context& ioc, std::shared_ptr<ErrorStream> errors) noexcept
      : ioc_(&ioc), errors_(std::move(errors)) {}
  /// Posts `f` (moved from only then) and returns true, or returns false once closed.
  template <class F>
  bool post(F& f) {
    std::lock_guard lock(mu_);
    if (!ioc_) return false;
    boost::asio::post(*ioc_, std::move(f));
    return true;
  }
  bool on_io_thread() {
    std::lock_guard lock(mu_);
    return ioc_ && ioc_->get_executor().running_in_this_thread();
  }
  void close() noexcept {
    std::lock_guard lock(mu_);
    ioc_ = nullptr;
  }

private:
  std::mutex mu_;
  boost::asio::io_context* ioc_;
  std::shared_ptr<ErrorStream> errors_;
};

}  // namespace csgi::standalone::detail
