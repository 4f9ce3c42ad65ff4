# Empty dependencies file for csgi_core.
# This may be replaced when dependencies are built.
