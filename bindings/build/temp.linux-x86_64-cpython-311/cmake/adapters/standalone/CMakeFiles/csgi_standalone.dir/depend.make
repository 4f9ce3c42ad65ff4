# Empty dependencies file for csgi_standalone.
# This may be replaced when dependencies are built.
