# Empty dependencies file for csgi-cgi.
# This may be replaced when dependencies are built.
