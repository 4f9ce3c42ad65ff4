require_relative "sinatra_app"
run SinatraApp
