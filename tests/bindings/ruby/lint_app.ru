# The Rack app of test_rack_host.py: every path but /raw/* runs inside Rack::Lint, which raises (a 500
# and a logged LintError) on anything the host does against the Rack 2.2 SPEC.
require "digest"
require "json"

CLOSED = Hash.new(0)  # body.close calls, by path

def spooled_files  # this process's open files that are spooled request bodies (unlinked)
  Dir.children("/proc/self/fd").count do |fd|
    File.readlink("/proc/self/fd/#{fd}").match?(%r{/csgi-rack-body.* \(deleted\)\z})
  rescue SystemCallError
    false
  end
end

class Body
  def initialize(path, parts, fail_at: nil, wait_for: nil, endless: false)
    @path, @parts, @fail_at, @wait_for, @endless = path, parts, fail_at, wait_for, endless
  end

  def each
    i = 0
    loop do
      break if !@endless && i >= @parts.size
      raise "failed at part #{i}" if i == @fail_at
      if @wait_for && i == 1  # the second part only once the client has seen the first (bounded wait)
        200.times { break if File.exist?(@wait_for); sleep 0.05 }
      end
      yield @endless ? "part #{i}\n" : @parts[i]
      i += 1
      break if @endless && i > 10_000
    end
  end

  def close
    CLOSED[@path] += 1
  end
end

class FileOnlyBody  # to_path only: each is never the way this body is sent
  def initialize(path) = @path = path
  def to_path = @path
  def each = raise("each called on a to_path body")
  def close = CLOSED["/raw/file"] += 1
end

class NotAnArrayBody  # to_ary gives nil, as Rails' ActionDispatch::Response::RackBody: a body to stream
  def to_ary = nil
  def each = yield("streamed")
  def close = CLOSED["/raw/ary-nil"] += 1
end

LINTED = lambda do |env|
  req_path = env["PATH_INFO"]
  text = { "Content-Type" => "text/plain" }
  case req_path
  when "/env"
    keys = env.keys.select { |k| k.is_a?(String) && !k.start_with?("rack.") }
    body = keys.to_h { |k| [k, env[k]] }
    body["rack.version"] = env["rack.version"]
    %w[rack.url_scheme rack.multithread rack.multiprocess rack.run_once rack.hijack?].each { |k| body[k] = env[k] }
    body["input_encoding"] = env["rack.input"].read.encoding.to_s
    [200, { "Content-Type" => "application/json" }, [JSON.generate(body)]]
  when "/input"
    input = env["rack.input"]
    out = []
    out << input.gets.inspect
    out << input.read(3).inspect
    buf = +"keep"
    out << input.read(4, buf).inspect << buf.inspect
    out << input.read.bytesize
    out << input.read.inspect << input.read(1).inspect << input.gets.inspect
    input.rewind
    lines = []
    input.each { |l| lines << l }
    out << lines.size << lines.join.bytesize
    input.rewind
    out << input.read.bytesize
    [200, text, [out.join("|")]]
  when "/stream"
    [200, text, Body.new(req_path, ["first\n", "second\n", "third\n"], wait_for: env["QUERY_STRING"])]
  when "/endless"
    [200, text, Body.new(req_path, [], endless: true)]
  when "/midstream"
    [200, text, Body.new(req_path, ["one\n", "two\n"], fail_at: 1)]
  when "/boom"
    raise ArgumentError, "boom from the app"
  when "/errors"
    env["rack.errors"].puts "errors-line-one"
    env["rack.errors"].write "errors-part-"
    env["rack.errors"].write "two\n"
    env["rack.errors"].write "errors-unterminated"
    env["rack.errors"].flush
    [200, text, ["ok"]]
  when "/headers"
    [201, { "Content-Type" => "text/plain", "Set-Cookie" => "a=1\nb=2", "X-Multi" => "x" }, ["made"]]
  when "/hints"  # Puma's shape; a value with "\n" is two fields
    sent = env["rack.early_hints"].call({ "Link" => "</style.css>; rel=preload; as=style\n</app.js>; rel=preload" })
    [200, text, ["sent=#{sent}"]]
  when "/spool"  # the body read whole, then again after a rewind in pieces; the spooled files meanwhile
    input = env["rack.input"]
    first = input.read
    input.rewind
    again = +""
    while (piece = input.read(1000))
      again << piece
    end
    [200, text, ["#{first.bytesize} #{Digest::SHA256.hexdigest(first)} #{again == first} #{spooled_files}"]]
  when "/spooled-files"
    [200, text, [spooled_files.to_s]]
  when "/closed"
    [200, { "Content-Type" => "application/json" }, [JSON.generate(CLOSED)]]
  when "/files/lint_app.ru"
    Rack::Files.new(__dir__).call(env.merge("PATH_INFO" => "/lint_app.ru"))
  else
    [404, text, ["no #{req_path}"]]
  end
end

map "/raw" do
  run lambda { |env|
    case env["PATH_INFO"]
    when "/file" then [200, { "Content-Type" => "text/plain" }, FileOnlyBody.new(File.join(__dir__, "lint_app.ru"))]
    when "/not-a-body" then [200, { "Content-Type" => "text/plain" }, "a String is no Rack body"]
    when "/proxied"  # an Array in two proxies, as Rails' middleware return it: to_ary gives the Array
      inner = Rack::BodyProxy.new(["pro", "xied"]) { CLOSED["/raw/proxied"] += 1 }
      [200, { "Content-Type" => "text/plain" }, Rack::BodyProxy.new(inner) { CLOSED["/raw/proxied"] += 10 }]
    when "/ary-nil" then [200, { "Content-Type" => "text/plain" }, NotAnArrayBody.new]
    when "/missing-file" then [200, { "Content-Type" => "text/plain" }, FileOnlyBody.new("/nonexistent/csgi-file")]
    else [404, {}, []]
    end
  }
end

map "/" do
  use Rack::Lint
  run LINTED
end
