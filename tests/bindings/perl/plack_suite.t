# Plack's own server conformance suite (the one Starman and Twiggy run) against Plack::Handler::CSGI.
use strict;
use warnings;
use Test::More;
use Plack::Test::Suite;

Plack::Test::Suite->run_server_tests('CSGI');
done_testing;
