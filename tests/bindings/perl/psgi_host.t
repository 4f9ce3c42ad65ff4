# csgi serve --psgi over real sockets: the PSGI env, psgi.input, array, filehandle and getline bodies,
# streaming and delayed responses, psgi.errors, psgix.cleanup, psgix.io (an app speaking its own protocol on
# the connection), psgix.logger, and a die or a bad response → 500 logged with the request line. Served in this process's child (--workers 0) and by two forked workers.
use strict;
use warnings;
use File::Temp qw(tempdir);
use FindBin;
use HTTP::Tiny;
use IO::Socket::INET;
use Test::More;
use Test::TCP qw(test_tcp);

my $csgi = $ENV{CSGI_PROGRAM} or plan skip_all => 'CSGI_PROGRAM (the csgi program) is not set';
my $dir = tempdir(CLEANUP => 1);
my $file = "$dir/body.txt";
open my $out, '>', $file or die $!;
print $out "x" x 100_000, "end\n";
close $out;

for my $workers (0, 2) {
    my $log = "$dir/errors-$workers.log";
    test_tcp(
        server => sub {
            my $port = shift;
            open STDERR, '>', $log or die $!;
            exec $csgi, 'serve', '--psgi', "$FindBin::Bin/app.psgi", '--listen', "127.0.0.1:$port",
                '--workers', $workers;
            die "exec $csgi: $!";
        },
        client => sub { client(shift, $workers, $log) },
    );
}
done_testing;

# One request on a fresh connection; everything the server sends until it closes.
sub exchange {
    my ($port, $request) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 10) or die $!;
    print $sock $request;
    local $/;
    my $answer = <$sock>;
    return defined $answer ? $answer : '';
}

sub client {
    my ($port, $workers, $log) = @_;
    my $http = HTTP::Tiny->new(timeout => 10, keep_alive => 0);
    my $base = "http://127.0.0.1:$port";
    note "--workers $workers";

    my $r = $http->get("$base/env?a=1&b=%20", { headers => { 'X-PSGI-Test' => 'yes' } });
    is $r->{status}, 200, 'env';
    my %env = $r->{content} =~ /^([^=\n]+)=(.*)$/mg;
    is $env{REQUEST_METHOD}, 'GET';
    is $env{SCRIPT_NAME}, '', 'SCRIPT_NAME is empty at the root, never undef';
    is $env{PATH_INFO}, '/env';
    is $env{QUERY_STRING}, 'a=1&b=%20';
    is $env{REQUEST_URI}, '/env?a=1&b=%20';
    is $env{SERVER_PORT}, $port;
    is $env{SERVER_PROTOCOL}, 'HTTP/1.1';
    is $env{HTTP_X_PSGI_TEST}, 'yes';
    is $env{'psgi.version'}, '1.1';
    is $env{'psgi.url_scheme'}, 'http';
    is $env{'psgi.multithread'}, 0;
    is $env{'psgi.multiprocess'}, $workers ? 1 : 0;
    is $env{'psgi.run_once'}, 0;
    is $env{'psgi.nonblocking'}, 0;
    is $env{'psgi.streaming'}, 1;
    is $env{'psgix.cleanup'}, 1;
    like $env{'psgix.input.buffered'}, qr/^[01]$/;
    is $env{'input.can_read'}, 1;
    is $env{io}, 1, 'psgix.io on an HTTP/1.1 connection';
    is $env{logger}, 1, 'psgix.logger';

    my $payload = join '', map { chr(($_ * 7) % 256) } 0 .. 99_999;
    $r = $http->post("$base/echo", { content => $payload, headers => { 'Content-Type' => 'application/octet-stream' } });
    is $r->{status}, 200, 'psgi.input read in small pieces';
    is $r->{headers}{'x-read'}, 100_000;
    ok $r->{content} eq $payload, 'the body comes back unchanged';

    $r = $http->get("$base/array");
    is $r->{status}, 201, 'array body';
    is $r->{content}, 'one two three';
    is $r->{headers}{'content-length'}, 13;
    is_deeply $r->{headers}{'x-multi'}, ['a', 'b'], 'repeated header fields';

    $r = $http->get("$base/file?$file");
    is $r->{status}, 200, 'IO::File body with path';
    is $r->{headers}{'content-length'}, 100_004, 'sent as a file: its length known up front';
    is length $r->{content}, 100_004;
    like $r->{content}, qr/^x+end\n\z/;

    $r = $http->get("$base/getline");
    is $r->{content}, "line 1\nline 2\n", 'getline body';
    is $http->get("$base/closed")->{content}, 'closed=1', 'the server closed the body' unless $workers;

    $r = $http->get("$base/stream");
    is $r->{status}, 200, 'streaming writer';
    is $r->{content}, "part 1\npart 2\npart 3\n";

    $r = $http->get("$base/delayed");
    is $r->{status}, 202, 'delayed response';
    is $r->{content}, 'later';

    # Interim responses from the perl thread, over HTTP/2 and HTTP/1.1 alike: the io thread sends them.
    SKIP: {
        skip 'curl is not installed', 3 unless grep { -x "$_/curl" } split /:/, $ENV{PATH};
        my $h2 = `curl -s -i --max-time 10 --http2-prior-knowledge http://127.0.0.1:$port/hints`;
        like $h2, qr{^HTTP/2 103\s*\r\nlink: </style\.css>; rel=preload; as=style\r\n\r\nHTTP/2 200 }i,
            'psgix.informational sends a 103 before the response (h2c)';
        like $h2, qr/sent=1\z/;
        like `curl -s --max-time 10 --http2-prior-knowledge http://127.0.0.1:$port/env`, qr/^io=0$/m,
            'no psgix.io on an HTTP/2 stream';
    }
    my $raw = exchange($port, "GET /hints HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    like $raw, qr{^HTTP/1\.1 103 Early Hints\r\nLink: </style\.css>; rel=preload; as=style\r\n\r\nHTTP/1\.1 200 .*sent=1\z}s,
        'psgix.informational sends a 103 before the response (HTTP/1.1)';

    # psgix.io: the app takes the socket and speaks its own protocol; what the client sent with the
    # request comes first.
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 10) or die $!;
    print $sock "GET /io HTTP/1.1\r\nHost: x\r\n\r\nsent early\n";
    my $head = '';
    while (defined(my $l = <$sock>)) { $head .= $l; last if $l eq "\r\n" }
    like $head, qr{^HTTP/1\.1 101 Switching Protocols\r\nUpgrade: echo\r\n}, 'psgix.io: the app writes its own answer';
    is scalar <$sock>, "echo: sent early\n", 'psgix.io: the bytes past the request come first';
    print $sock "bye\n";
    is scalar <$sock>, "echo: bye\n", 'psgix.io: the app reads what the client sends next';
    is scalar <$sock>, undef, 'psgix.io: the app closed the connection';
    close $sock;

    $r = $http->get("$base/log");
    is $r->{content}, 'bad level refused', 'psgix.logger refuses an unknown level';

    $r = $http->get("$base/die");
    is $r->{status}, 500, 'die answers 500';
    unlike $r->{content}, qr/on purpose/, 'the message stays in the log';
    $r = $http->get("$base/bad");
    is $r->{status}, 500, 'a response that is no array or code answers 500';

    $r = $http->get("$base/dropped");
    is $r->{status}, 500, 'a responder dropped unanswered answers 500';

    $r = $http->get("$base/errors");
    is $r->{status}, 200, 'psgi.errors';

    unless ($workers) {
        $http->get("$base/cleanup?first");
        is $http->get("$base/cleaned")->{content}, 'first', 'psgix.cleanup handlers ran after the response';
    }

    is $http->get("$base/env")->{status}, 200, 'still serving after the failures';

    open my $in, '<', $log or die $!;
    my $errors = do { local $/; <$in> };
    like $errors, qr{^csgi: 500 for "GET /die HTTP/1\.1": the app raised: the app died on purpose$}m, 'the die is logged with the request line';
    like $errors, qr{^csgi: 500 for "GET /bad HTTP/1\.1": the app raised: .*array reference}m, 'the bad response is logged';
    like $errors, qr{^csgi: 500 for "GET /dropped HTTP/1\.1": the app raised: the PSGI app dropped its responder}m, 'the dropped responder is logged';
    like $errors, qr{a message for psgi\.errors}, 'psgi.errors reaches the error log';
    like $errors, qr{^\[warn\] a message for psgix\.logger$}m, 'psgix.logger reaches the error log';
    unlike $errors, qr{"GET /io }, 'nothing is logged for the request whose connection the app took';
}
