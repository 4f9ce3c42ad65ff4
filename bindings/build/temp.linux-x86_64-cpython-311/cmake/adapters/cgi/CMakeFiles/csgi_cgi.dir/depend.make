# Empty dependencies file for csgi_cgi.
# This may be replaced when dependencies are built.
