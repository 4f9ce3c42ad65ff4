# Empty dependencies file for csgi_middleware.
# This may be replaced when dependencies are built.
