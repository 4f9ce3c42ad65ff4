# CSGI->load_app: a csgi app library (tests/conformance's) mounted in a Plack::Builder app, served by
# Starman over real sockets (Plack::Test's Server implementation), answering as under csgi serve --app.
use strict;
use warnings;
use File::Temp qw(tempdir);
use HTTP::Request::Common qw(GET POST);
use Test::More;

my $lib = $ENV{CSGI_CONFORMANCE_APP} or plan skip_all => 'CSGI_CONFORMANCE_APP (libconformance_app.so) is not set';
eval { require Plack::Test; require Plack::Builder; require Starman; 1 }
    or plan skip_all => 'Plack and Starman (libplack-perl, starman) are not installed';
use CSGI;

$Plack::Test::Impl = 'Server';
$ENV{PLACK_SERVER} = 'Starman';

my $dir = tempdir(CLEANUP => 1);
my $cpp = CSGI->load_app($lib, $dir);
my $app = Plack::Builder::builder(sub {
    Plack::Builder::mount('/cpp' => $cpp);
    Plack::Builder::mount('/' => sub { [200, ['Content-Type' => 'text/plain'], ['perl']] });
});

Plack::Test::test_psgi($app, sub {
    my $cb = shift;
    my $get = sub {
        my ($test, $path) = @_;
        return $cb->(GET "http://127.0.0.1" . ($path || '/cpp/x'), 'X-Csgi-Test' => $test);
    };
    is $cb->(GET '/')->content, 'perl', 'the Perl app beside it';
    is $get->('script_name')->content, '/cpp', 'SCRIPT_NAME from the mount';
    is $get->('path_info', '/cpp/a/./b')->content, '/cpp/a/b' =~ s{^/cpp}{}r, 'PATH_INFO without dot segments';
    is $get->('query_string', '/cpp/x?a=1&b=2')->content, 'a=1&b=2';
    is $get->('request_uri', '/cpp/x?q=1')->content, '/cpp/x?q=1';
    is $get->('url_scheme')->content, 'http';

    my $r = $cb->(POST 'http://127.0.0.1/cpp/x', 'X-Csgi-Test' => 'post_urlencoded', Content => [a => 1, b => 'x y']);
    is $r->content, '9|application/x-www-form-urlencoded|a=1&b=x+y', 'psgi.input read by the C++ app';
    my $big = 'z' x 300_000;
    $r = $cb->(POST 'http://127.0.0.1/cpp/x', 'X-Csgi-Test' => 'echo', Content => $big);
    ok $r->content eq $big, 'a big body echoed';

    $r = $get->('stream_body');
    is $r->content, 'foobarbaz', 'a csgi stream as a getline body';
    $r = $get->('file_fd');
    is $r->code, 200, 'a file body';
    ok length $r->content > 0;
    is $get->('file_path')->content, $r->content, 'a file body by path';

    is $get->('delayed')->content, 'delayed', 'a delayed response';
    is $get->('delayed_thread')->content, 'from another thread', 'answered from another thread';
    is $get->('writer')->content, 'one two three', 'a writer on another thread';

    $r = $get->('repeated_response_header');
    is_deeply [$r->header('X-Foo')], ['bar', 'baz'], 'repeated response header fields';
    is $get->('delayed_dropped')->code, 500, 'a responder dropped unanswered answers 500';
    is $get->('die')->code, 500, 'an exception answers 500';
    is $get->('http_error')->code, 418, 'an HttpError keeps its status';
    is $get->('not_found')->code, 404;
    is $get->('errors')->content, 'present', 'psgi.errors as csgi.errors';
    is $cb->(GET '/')->content, 'perl', 'still serving';
});
done_testing;
