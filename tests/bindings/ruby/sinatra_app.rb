# The Sinatra app of test_sinatra_differential.py, served alike by `csgi serve --rack sinatra.ru` and Puma.
require "digest"
require "json"
require "sinatra/base"

class SinatraApp < Sinatra::Base
  set :environment, :production
  set :sessions, true
  set :session_secret, "csgi-differential-test-" + "s" * 64
  set :host_authorization, { permitted_hosts: [] } if respond_to?(:host_authorization)

  get "/" do
    "hello from sinatra"
  end

  get "/hello/:name" do
    "hello #{params[:name]} (#{request.path_info})"
  end

  get "/query" do
    content_type :json
    JSON.generate(params)
  end

  post "/form" do
    content_type :json
    JSON.generate(params.merge("content_type" => request.content_type))
  end

  post "/upload" do
    f = params[:doc]
    data = f[:tempfile].read
    "#{f[:filename]} #{data.bytesize} #{Digest::SHA256.hexdigest(data)} #{params[:note]}"
  end

  get "/redirect" do
    redirect to("/hello/there")
  end

  get "/cookie" do
    response.set_cookie("visit", value: "yes", path: "/")
    "seen=#{request.cookies['visit'] || 'none'}"
  end

  get "/session/set" do
    session[:value] = params[:v]
    "stored #{params[:v]}"
  end

  get "/session/get" do
    "session=#{session[:value] || 'none'}"
  end

  get "/stream" do
    stream do |out|
      5.times { |i| out << "chunk #{i}\n" }
    end
  end

  get "/file" do
    send_file File.join(__dir__, "sinatra_app.rb"), type: "text/plain"
  end

  get "/halt" do
    halt 418, "teapot"
  end

  get "/error" do
    raise "sinatra route failed"
  end

  post "/echo" do
    request.body.rewind
    first = request.body.read
    request.body.rewind
    "#{first.bytesize}:#{request.body.read == first}"
  end
end
