#include "csgi/core/on_response.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace csgi {

namespace {

class FileStream final : public Stream {
public:
  FileStream(FileBody f, std::size_t chunk) : f_(std::move(f)), chunk_(chunk) {
    if (!f_.file) f_ = FileBody::open(f_.path, f_.offset, f_.length);
    left_ = f_.size();
    pos_ = f_.offset;
  }
  bool next(std::string& out) override {
    if (left_ == 0) return false;
    out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(left_, chunk_)));
    ssize_t r;
    do r = ::pread(f_.file->fd(), out.data(), out.size(), static_cast<off_t>(pos_));
    while (r < 0 && errno == EINTR);
    if (r < 0) throw std::system_error(errno, std::generic_category(), "read " + f_.path);
    if (r == 0) return false;
    out.resize(static_cast<std::size_t>(r));
    pos_ += static_cast<std::uint64_t>(r);
    left_ -= static_cast<std::uint64_t>(r);
    return true;
  }
  void close() override { f_.file.reset(); }

private:
  FileBody f_;
  std::size_t chunk_;
  std::uint64_t left_ = 0, pos_ = 0;
};

class OnceStream final : public Stream {
public:
  explicit OnceStream(std::string s) : s_(std::move(s)) {}
  bool next(std::string& out) override {
    if (done_) return false;
    done_ = true;
    out = std::move(s_);
    return true;
  }

private:
  std::string s_;
  bool done_ = false;
};

class FilterStream final : public Stream {
public:
  FilterStream(StreamPtr inner, BodyFilter f) : inner_(std::move(inner)), f_(std::move(f)) {}
  ~FilterStream() override { close(); }
  bool next(std::string& out) override {
    while (!eof_) {
      if (inner_ && inner_->next(buf_)) {
        out = f_(buf_, false);
      } else {
        eof_ = true;
        out = f_({}, true);
      }
      if (!out.empty()) return true;
    }
    return false;
  }
  void close() override {
    if (inner_) std::exchange(inner_, nullptr)->close();
  }
  Headers trailers() override { return inner_ ? inner_->trailers() : Headers(); }

private:
  StreamPtr inner_;
  BodyFilter f_;
  std::string buf_;
  bool eof_ = false;
};

class FilterWriter final : public Writer {
public:
  FilterWriter(WriterPtr inner, BodyFilter f) : inner_(std::move(inner)), f_(std::move(f)) {}
  bool write(std::string_view chunk) override {
    std::string out = f_(chunk, false);
    return out.empty() ? true : inner_->write(out);
  }
  void close() override {
    std::string tail = f_({}, true);
    if (!tail.empty()) inner_->write(tail);
    inner_->close();
  }
  void set_trailers(Headers trailers) override { inner_->set_trailers(std::move(trailers)); }

private:
  WriterPtr inner_;
  BodyFilter f_;
};

Body filtered_body(Body body, const BodyFilter& f) {
  if (auto* s = std::get_if<std::string>(&body)) {
    std::string out = f(*s, false);
    out += f({}, true);
    return out;
  }
  if (auto* b = std::get_if<SharedBytes>(&body)) {
    std::string out = f(*b ? std::string_view(**b) : std::string_view{}, false);
    out += f({}, true);
    return out;
  }
  return StreamPtr(std::make_shared<FilterStream>(body_stream(std::move(body)), f));
}

class CallbackResponder final : public ResponderImpl {
public:
  CallbackResponder(Responder outer, ResponseCallback cb) : outer_(std::move(outer)), cb_(std::move(cb)) {}
  void respond(Response r) override { outer_.respond(on_response(std::move(r), cb_)); }
  WriterPtr start(int status, Headers headers) override {
    Response head;
    head.status = status;
    head.headers = std::move(headers);
    head.body = StreamPtr{};
    BodyFilter f = cb_(head);
    WriterPtr w = outer_.start(head.status, std::move(head.headers));
    if (!f) return w;
    return std::make_shared<FilterWriter>(std::move(w), std::move(f));
  }

private:
  Responder outer_;
  ResponseCallback cb_;
};

}  // namespace

void detail::filter_body(Response& res, const BodyFilter& f) { res.body = filtered_body(std::move(res.body), f); }

StreamPtr file_stream(FileBody file, std::size_t chunk_size) {
  return std::make_shared<FileStream>(std::move(file), chunk_size);
}

StreamPtr body_stream(Body body) {
  if (auto* s = std::get_if<std::string>(&body)) return std::make_shared<OnceStream>(std::move(*s));
  if (auto* b = std::get_if<SharedBytes>(&body)) return std::make_shared<OnceStream>(*b ? **b : std::string());
  if (auto* f = std::get_if<FileBody>(&body)) return file_stream(std::move(*f));
  if (auto* p = std::get_if<StreamPtr>(&body)) return *p;
  throw std::logic_error("body_stream: a delayed body is not a stream");
}

Response on_response(Response res, ResponseCallback cb) {
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    Delayed inner = std::move(*d);
    return Response::delayed([inner = std::move(inner), cb = std::move(cb)](Responder outer) {
      inner(Responder(std::make_shared<CallbackResponder>(std::move(outer), cb)));
    });
  }
  if (BodyFilter f = cb(res)) detail::filter_body(res, f);
  return res;
}

Response on_headers(Response res, std::function<void(Response&)> fn) {
  if (!fn) throw std::invalid_argument("on_headers: empty function");
  return on_response(std::move(res), [fn = std::move(fn)](Response& r) -> BodyFilter {
    fn(r);
    return nullptr;
  });
}

}  // namespace csgi
