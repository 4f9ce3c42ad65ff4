# The Ruby side of the Rack host (request.cpp defines CSGI::InputSource, CSGI::ErrorSink and
# CSGI::ResponseSink over the csgi request; this file turns them into rack.input, rack.errors and the
# sending of [status, headers, body]).
module CSGI
  # rack.input: the request body read from csgi.input as the app asks, kept so that rewind replays it:
  # in memory up to SPOOL_ABOVE bytes, beyond that in an unlinked temporary file (Dir.tmpdir), as Puma
  # and Unicorn keep large bodies. #close_spool (the host, when the request ends) closes that file.
  class Input
    SPOOL_ABOVE = 112 * 1024

    def initialize(source)
      @source = source
      @store = nil  # made by the first read: most requests have no body to keep
      @size = 0
      @pos = 0
      @eof = false
    end

    def gets
      loop do
        line = @size.zero? ? nil : store_at(@pos).gets
        if line&.end_with?("\n") || (line && @eof)
          @pos += line.bytesize
          return line
        end
        return nil if line.nil? && @eof
        fill
      end
    end

    def read(length = nil, outbuf = nil)
      if length.nil?
        nil while fill
        data = take(@size - @pos)
      else
        raise ArgumentError, "negative length #{length} given" if length.negative?
        nil while @size - @pos < length && fill
        data = length.positive? && @pos >= @size ? nil : take(length)
      end
      return data unless outbuf
      outbuf.replace(data || "")
      data && outbuf
    end

    def each
      while (line = gets)
        yield line
      end
    end

    def rewind
      @pos = 0
    end

    def close_spool
      @store.close if @store && !@store.is_a?(StringIO)
    end

    private

    def store_at(pos)
      @store ||= StringIO.new(String.new(encoding: Encoding::BINARY))
      @store.seek(pos)
      @store
    end

    def take(length)
      data = store_at(@pos).read(length) || String.new(encoding: Encoding::BINARY)
      @pos += data.bytesize
      data
    end

    def fill
      return false if @eof
      chunk = @source.read_chunk(65536)
      unless chunk
        @eof = true
        return false
      end
      spool if !@store.is_a?(Tempfile) && @size + chunk.bytesize > SPOOL_ABOVE
      store_at(@size).write(chunk)
      @size += chunk.bytesize
      true
    end

    def spool
      file = Tempfile.new("csgi-rack-body", binmode: true)
      file.unlink  # gone from the directory; the open file lives until close_spool
      file.write(@store.string) if @store
      @store = file
    end
  end

  # rack.errors: whole lines to csgi.errors (a write without a newline waits for the rest or a flush).
  class Errors
    def initialize(sink)
      @sink = sink
      @pending = String.new(encoding: Encoding::BINARY)
    end

    def write(str)
      str = str.to_s
      @pending << str.b
      nl = @pending.rindex("\n")
      @sink.write_message(@pending.slice!(0, nl + 1)) if nl
      str.bytesize
    end

    def puts(*args)
      args = [""] if args.empty?
      args.flatten.each { |a| s = a.to_s; write(s.end_with?("\n") ? s : s + "\n") }
      nil
    end

    def flush
      @sink.write_message(@pending.slice!(0, @pending.bytesize)) unless @pending.empty?
      self
    end
  end

  module Host
    VERSION = [1, 3].freeze

    def self.load(path)
      require "uri"  # loaded by every Rack server (Puma, WEBrick); Rack::Lint 2.2 uses it without requiring it
      require "rack"
      require "stringio"
      require "tempfile"
      app = Rack::Builder.parse_file(path)
      app.is_a?(Array) ? app[0] : app  # Rack 2 returns [app, options]
    end

    # Calls the app and sends its answer: a body with to_path as the file (200 only: a partial answer
    # names the whole file), a body whose parts are all there (parts_of) at once, anything else chunk
    # by chunk as each yields (the status and headers with the first; stopping when the client has
    # gone). body.close is called once, whatever happens.
    def self.call(app, env, source, error_sink, sink)
      errors = Errors.new(error_sink)
      env["rack.version"] = VERSION
      input = env["rack.input"] = Input.new(source)
      env["rack.errors"] = errors
      env["rack.early_hints"] = ->(headers) { sink.early_hints(fields_of(headers)) } if sink.hints_offered?
      begin
        status, headers, body = app.call(env)
        begin
          status = Integer(status)
          fields = fields_of(headers)
          if status == 200 && body.respond_to?(:to_path)
            sink.file(status, fields, body.to_path.to_s)
          elsif (parts = parts_of(body))
            sink.complete(status, fields, parts.join)
          else
            raise TypeError, "Rack body #{body.class} does not respond to each" unless body.respond_to?(:each)
            started = false  # the status goes out with the first chunk: a body failing before it is a 500
            body.each do |chunk|
              unless started
                sink.start(status, fields)
                started = true
              end
              break unless sink.write(chunk)
            end
            sink.start(status, fields) unless started
          end
        ensure
          body.close if body.respond_to?(:close)
        end
      ensure
        errors.flush
        input.close_spool
      end
      nil
    end

    # The parts of a body that holds them all: an Array, or a body whose to_ary gives one (Rack 3's
    # rule, which Rack 2.2's BodyProxy follows by delegation: Rails' middleware wrap its Array bodies
    # in several). nil for a body to stream: one without to_ary, or whose to_ary gives nil (Rails'
    # ActionDispatch::Response::RackBody, which ActionController::Live streams through).
    def self.parts_of(body)
      return body if body.is_a?(Array)
      return nil unless body.respond_to?(:to_ary)
      parts = body.to_ary
      parts.is_a?(Array) ? parts : nil
    end

    # A Rack headers Hash as [name, value, ...]: a value with "\n" is several fields (Rack 2.2).
    # (A value without "\n" is taken as it is: no Array per header.)
    def self.fields_of(headers)
      fields = []
      headers.each do |k, v|
        k = k.to_s
        v = v.to_s
        if v.include?("\n")
          v.split("\n").each { |x| fields << k << x }
        elsif !v.empty?
          fields << k << v
        end
      end
      fields
    end

    def self.describe(e)
      "#{e.class}: #{e.message}\n" + (e.backtrace || []).map { |l| "\t#{l}\n" }.join
    end
  end
end
