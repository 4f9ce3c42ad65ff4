# Empty compiler generated dependencies file for csgi-cgi.
# This may be replaced when dependencies are built.
