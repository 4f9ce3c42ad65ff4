# Empty dependencies file for csgi_bundler.
# This may be replaced when dependencies are built.
