# The Rails app of test_rails_differential.py in one file, served alike by `csgi serve --rack rails.ru`
# and Puma: Rails 6.1's railties and actionpack (no database), one controller.
ENV["RAILS_ENV"] ||= "production"
ENV["SECRET_KEY_BASE"] ||= "csgi-rails-differential-" + "k" * 64
require "digest"
require "rails"
require "action_controller/railtie"

class RailsDiffApp < Rails::Application
  config.root = __dir__
  config.eager_load = false
  config.logger = ActiveSupport::Logger.new(nil)
  config.log_level = :fatal
  config.hosts.clear
  config.require_master_key = false
  config.action_controller.allow_forgery_protection = true
  config.session_store :cookie_store, key: "_csgi_diff_session"

  routes.append do
    root "pages#index"
    get "json" => "pages#json"
    get "hello/:name" => "pages#hello"
    get "redirect" => "pages#go"
    get "form" => "pages#form"
    post "submit" => "pages#submit"
    post "upload" => "pages#upload"
    get "cookie" => "pages#cookie"
    get "session/set" => "pages#session_set"
    get "session/get" => "pages#session_get"
    get "live" => "live#index"
    get "hints" => "pages#hints"
  end
end

class PagesController < ActionController::Base
  protect_from_forgery with: :exception
  skip_forgery_protection only: :upload

  def index
    render html: "<h1>hello from rails</h1>".html_safe
  end

  def json
    render json: { ok: true, list: [1, 2], q: params[:q] }
  end

  def hello
    render plain: "hello #{params[:name]} #{params.permit(:x, t: []).to_h}"
  end

  def go
    redirect_to "/hello/there"
  end

  def form
    render plain: form_authenticity_token
  end

  def submit
    render plain: "submitted #{params[:name]}"
  end

  def upload
    f = params.require(:doc)
    data = f.read
    render plain: "#{f.original_filename} #{data.bytesize} #{Digest::SHA256.hexdigest(data)} #{params[:note]}"
  end

  def cookie
    cookies[:visit] = "yes"
    render plain: "seen=#{request.cookies['visit'] || 'none'}"
  end

  def session_set
    session[:value] = params[:v]
    render plain: "stored #{params[:v]}"
  end

  def session_get
    render plain: "session=#{session[:value] || 'none'}"
  end

  def hints
    request.send_early_hints("Link" => "</style.css>; rel=preload; as=style")
    render plain: "hinted"
  end
end

class LiveController < ActionController::Base
  include ActionController::Live

  def index
    response.headers["Content-Type"] = "text/plain"
    response.headers["Last-Modified"] = Time.at(0).httpdate  # else Rack::ETag reads the whole body to digest it
    5.times { |i| response.stream.write("live #{i}\n") }
  ensure
    response.stream.close
  end
end

Rails.application.initialize!
run Rails.application
