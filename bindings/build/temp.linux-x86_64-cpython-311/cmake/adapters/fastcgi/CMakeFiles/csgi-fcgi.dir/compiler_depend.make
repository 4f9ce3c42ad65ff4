# Empty compiler generated dependencies file for csgi-fcgi.
# This may be replaced when dependencies are built.
