# Empty compiler generated dependencies file for csgi_python.
# This may be replaced when dependencies are built.
