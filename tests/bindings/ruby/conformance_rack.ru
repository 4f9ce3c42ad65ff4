# The conformance suite's app (tests/conformance/conformance_app.cpp) mirrored as a Rack app, for
# `csgi serve --rack conformance_rack.ru` run through tests/conformance/run_conformance.py (ctest
# conformance_rack_*). One behaviour per case, chosen by the X-Csgi-Test request header, answering what
# the C++ app answers; the cases a Rack app cannot express are skipped by tests/bindings/ruby/CMakeLists.txt.
# PATH_INFO and SCRIPT_NAME arrive percent-encoded (spec/rack.md): decoded once here, they are csgi's.
require "tmpdir"
require "fileutils"

module Conformance
  SMALL = 4096
  BIG = 1_300_000
  DIR = ENV["CSGI_CONFORMANCE_DIR"].to_s.empty? ? Dir.mktmpdir("csgi-conformance-rb-") : ENV["CSGI_CONFORMANCE_DIR"]
  FileUtils.mkdir_p(DIR)

  def self.pattern(n) = Array.new(n) { |i| (i * 7 + 3) & 0xFF }.pack("C*")

  def self.write_file(path, data)
    tmp = "#{path}.tmp#{Process.pid}"
    File.binwrite(tmp, data)
    File.rename(tmp, path)
  end

  SMALL_PATH = File.join(DIR, "small.bin")
  BIG_PATH = File.join(DIR, "big.bin")
  write_file(SMALL_PATH, pattern(SMALL))
  write_file(BIG_PATH, pattern(BIG))

  def self.marker(kind, token) = File.join(DIR, "#{kind}-#{token.to_s.gsub(/[^A-Za-z0-9]/, '')}")

  def self.text(body, status = 200)
    body = body.b
    [status, { "Content-Type" => "text/plain; charset=utf-8", "Content-Length" => body.bytesize.to_s }, [body]]
  end

  def self.value_of(env, key)
    v = env[key]
    return "<missing>" if v.nil?
    return v.to_s if v == true || v == false
    v.to_s
  end

  def self.fnv1a(data, h)
    data.each_byte do |c|
      h ^= c
      h = (h * 1_099_511_628_211) & 0xFFFF_FFFF_FFFF_FFFF
    end
    h
  end

  class Chunks  # a body whose close leaves a marker file (the C++ app's ChunkStream)
    def initialize(chunks, marker_path = nil, &block)
      @chunks, @marker_path, @block = chunks, marker_path, block
    end

    def each(&y)
      @block ? @block.call(y) : @chunks.each(&y)
    end

    def close
      Conformance.write_file(@marker_path, "closed") if @marker_path
    end
  end

  class FileBody  # sent as the file (to_path); each reads it for a server without sendfile
    def initialize(path) = @path = path
    def to_path = @path
    def each = File.open(@path, "rb") { |f| while (c = f.read(65536)); yield c; end }
  end

  class Gone  # endless chunks; close before the end (the client left) leaves a marker
    def initialize(marker_path) = @marker_path = marker_path

    def each
      3000.times do
        yield "w" * 16384
        sleep 0.005
      end
      @done = true
    end

    def close
      Conformance.write_file(@marker_path, "false") unless @done
    end
  end

  def self.unescape(s) = s.gsub(/%([0-9A-Fa-f]{2})/) { $1.hex.chr }.b

  def self.call(env)
    test = env["HTTP_X_CSGI_TEST"].to_s
    path = unescape(env["PATH_INFO"].to_s)
    script = unescape(env["SCRIPT_NAME"].to_s)
    token = env["HTTP_X_TOKEN"].to_s
    if test.empty?
      return text("canary") if path == "/canary" || path.end_with?("/canary")
      return text(path[5..]) if path.start_with?("/seq/")
    end
    case test
    when "script_name" then text(script)
    when "query_string" then text(env["QUERY_STRING"].to_s)
    when "post_urlencoded"
      text("#{value_of(env, 'CONTENT_LENGTH')}|#{value_of(env, 'CONTENT_TYPE')}|" + env["rack.input"].read)
    when "big_post"
      h, total, input = 1_469_598_103_934_665_603, 0, env["rack.input"]
      while (chunk = input.read(4096))
        total += chunk.bytesize
        h = fnv1a(chunk, h)
      end
      text(format("%d %016x", total, h))
    when "url_scheme" then text(env["rack.url_scheme"])
    when "stream_body"
      [200, { "Content-Type" => "text/plain; charset=utf-8" }, Chunks.new(%w[foo bar baz], marker("stream-closed", token))]
    when "chunked_response"
      [200, { "Content-Type" => "text/plain; charset=utf-8" }, Chunks.new(["chunk1 ", "chunk2 ", "chunk3"])]
    when "file_fd", "file_big", "file_path"
      big = test == "file_big"
      [200, { "Content-Type" => "application/octet-stream", "Content-Length" => (big ? BIG : SMALL).to_s },
       FileBody.new(big ? BIG_PATH : SMALL_PATH)]
    when "header_foo", "repeated_header" then text(value_of(env, "HTTP_FOO"))
    when "cookie" then text(value_of(env, "HTTP_COOKIE"))
    when "env"
      text([env["REQUEST_METHOD"], script, path, env["QUERY_STRING"], env["SERVER_NAME"], env["SERVER_PORT"]].join("|"))
    when "path_info" then text(path)
    when "mount"
      if path == "/admin" || path.start_with?("/admin/")
        text("admin " + path[6..])
      else
        text("site " + path)
      end
    when "server_protocol" then text(env["SERVER_PROTOCOL"])
    when "script_name_defined" then text(env.key?("SCRIPT_NAME") ? "defined" : "missing")
    when "stream_closed" then text(File.exist?(marker("stream-closed", token)) ? "closed" : "not closed")
    when "errors"
      present = env.key?("rack.errors")
      env["rack.errors"].write("conformance: a line for csgi.errors\n")
      env["rack.errors"].flush
      text(present ? "present" : "missing")
    when "status_line" then text("ok")
    when "die" then raise "conformance: the app died on purpose"
    when "http_error" then text("conformance: teapot", 418)
    when "repeated_response_header"
      [200, { "Content-Type" => "text/plain; charset=utf-8", "Content-Length" => "3", "X-Foo" => "bar\nbaz" }, ["two"]]
    when "no_cookie_key" then text(env.key?("COOKIE") ? "bogus" : "ok")
    when "not_modified" then [304, {}, []]
    when "request_uri" then text(env["REQUEST_URI"])
    when "long_header" then text(value_of(env, "HTTP_X_LONG"))
    when "delayed" then text("delayed")
    when "delayed_thread"
      result = Thread.new { sleep 0.02; "from another thread" }.value
      text(result)
    when "writer"  # chunks fed by another thread: the Rack form of a delayed response's Writer
      q = Queue.new
      Thread.new { ["one ", "two ", "three"].each { |s| q << s }; q << nil }
      [200, { "Content-Type" => "text/plain" }, Chunks.new(nil) { |y| while (s = q.pop); y.call(s); end }]
    when "echo", "input_seek" then text(env["rack.input"].read)
    when "not_found" then text("Not Found", 404)
    when "authorization" then text(value_of(env, "HTTP_AUTHORIZATION"))
    when "noread" then text("did not read the body")
    when "head" then text("a body HEAD must not carry")
    when "delayed_throws"
      [200, { "Content-Type" => "text/plain" }, Chunks.new(nil) { raise "conformance: delayed callable threw" }]
    when "stream_throws_first"
      [200, { "Content-Type" => "text/plain" }, Chunks.new(nil) { raise "conformance: next() threw" }]
    when "writer_gone" then [200, { "Content-Type" => "text/plain" }, Gone.new(marker("writer-false", token))]
    when "writer_gone_check" then text(File.exist?(marker("writer-false", token)) ? "false seen" : "not seen")
    when "writer_dropped"
      [200, { "Content-Type" => "text/plain" },
       Chunks.new(nil) { |y| y.call("partial"); raise "conformance: the body failed half-way" }]
    when "length_stream_over", "length_writer_over", "length_stream_short", "length_writer_short"
      over = test.end_with?("_over")
      chunks = ["hel", "lo"] + (over ? ["HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"] : [])
      [200, { "Content-Type" => "text/plain", "Content-Length" => over ? "5" : (2 << 20).to_s }, Chunks.new(chunks)]
    when "trailers_stream", "trailers_writer"  # Rack has no trailer fields: the bodies without them
      [200, { "Content-Type" => "text/plain" }, Chunks.new(["one ", "two ", "three"])]
    when "trailers_big" then [200, { "Content-Type" => "text/plain" }, Chunks.new(Array.new(64) { "x" * 4096 })]
    when "lint_off" then text("lint")
    else text("unknown conformance test '#{test}'", 404)
    end
  end
end

run Conformance
