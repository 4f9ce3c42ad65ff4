# The PSGI host under the gateway adapters: tests/bindings/perl/app.psgi as a CGI program (csgi-cgi --psgi
# and csgi serve --cgi --psgi, one process per request) and as a FastCGI app (csgi-fcgi --psgi) behind
# Apache mod_fcgid from a .htaccess, mounted at the site root and at /app: the env, the request body, a
# streamed response whose first part arrives while the app still runs, and a die → 500 logged with the
# request line.
use strict;
use warnings;
use File::Temp qw(tempdir);
use FindBin;
use lib $FindBin::Bin;
use HTTP::Tiny;
use IO::Select;
use IO::Socket::INET;
use IPC::Open3 qw(open3);
use Symbol qw(gensym);
use Test::More;
use ApacheFcgid;

my ($csgi, $cgi, $fcgi) = @ENV{qw(CSGI_PROGRAM CSGI_CGI_PROGRAM CSGI_FCGI_PROGRAM)};
plan skip_all => 'CSGI_PROGRAM, CSGI_CGI_PROGRAM and CSGI_FCGI_PROGRAM are not set' unless $csgi && $cgi && $fcgi;
my $app = "$FindBin::Bin/app.psgi";
my $dir = tempdir(CLEANUP => 1);
chmod 0777, $dir;    # the FastCGI app runs as Apache's User
my %env_line;

# ---- CGI: the request in the environment and on stdin, the response on stdout.

# Runs one CGI request; returns (status, headers text, body, stderr). $on_out sees the output as it comes.
sub cgi {
    my ($command, %args) = @_;
    my $body = defined $args{body} ? $args{body} : '';
    my ($path, $query) = split /\?/, $args{target}, 2;
    local %ENV = (
        PATH => $ENV{PATH}, GATEWAY_INTERFACE => 'CGI/1.1', REQUEST_METHOD => $args{method} || 'GET',
        SCRIPT_NAME => '', PATH_INFO => $path, QUERY_STRING => defined $query ? $query : '',
        REQUEST_URI => $args{target}, SERVER_NAME => '127.0.0.1', SERVER_PORT => 80, SERVER_PROTOCOL => 'HTTP/1.1',
        REMOTE_ADDR => '127.0.0.1', HTTP_HOST => '127.0.0.1', HTTP_X_PSGI_TEST => 'yes',
        (length $body ? (CONTENT_LENGTH => length $body, CONTENT_TYPE => 'application/octet-stream') : ()),
        (defined $ENV{PERL5LIB} ? (PERL5LIB => $ENV{PERL5LIB}) : ()));
    my $err = gensym;
    my $pid = open3(my $in, my $out, $err, @$command);
    print $in $body;
    close $in;
    my ($output, $errors) = ('', '');
    my $select = IO::Select->new($out, $err);
    my $deadline = time + 20;
    while ($select->count && time < $deadline) {
        for my $fh ($select->can_read(1)) {
            my $chunk;
            if (!sysread $fh, $chunk, 65536) { $select->remove($fh); next }
            if ($fh == $out) { $output .= $chunk; $args{on_out}->($output) if $args{on_out} }
            else { $errors .= $chunk }
        }
    }
    kill 'KILL', $pid if $select->count;
    waitpid $pid, 0;
    my ($head, $content) = split /\r\n\r\n/, $output, 2;
    my ($status) = ($head || '') =~ /^Status: (\d+)/m;
    return ($status || 0, $head || '', defined $content ? $content : '', $errors);
}

for my $command ([$cgi, '--psgi', $app], [$csgi, 'serve', '--cgi', '--psgi', $app]) {
    my $name = join ' ', ($command->[0] eq $cgi ? 'csgi-cgi' : 'csgi serve --cgi'), '--psgi';
    note $name;
    my ($status, $head, $body) = cgi($command, target => '/env?a=1&b=%20');
    is $status, 200, "$name: env";
    my %env = $body =~ /^([^=\n]+)=(.*)$/mg;
    is $env{PATH_INFO}, '/env', "$name: PATH_INFO";
    is $env{QUERY_STRING}, 'a=1&b=%20', "$name: QUERY_STRING";
    is $env{SCRIPT_NAME}, '', "$name: SCRIPT_NAME";
    is $env{HTTP_X_PSGI_TEST}, 'yes', "$name: the request's header fields";
    is $env{'psgi.streaming'}, 1, "$name: psgi.streaming";
    is $env{io}, 0, "$name: no psgix.io (the web server owns the connection)";

    my $payload = join '', map { chr(($_ * 7) % 256) } 0 .. 99_999;
    ($status, $head, $body) = cgi($command, method => 'POST', target => '/echo', body => $payload);
    ok $status == 200 && $body eq $payload, "$name: the request body comes back unchanged";

    my $flag = "$dir/cgi-stream-" . ($command->[0] eq $cgi ? 1 : 2);
    my $first_alone;
    ($status, $head, $body) = cgi($command, target => "/stream-wait?$flag", on_out => sub {
        return if -e $flag || $_[0] !~ /first\n/;
        $first_alone = $_[0] !~ /second/;
        open my $touch, '>', $flag or die $!;
    });
    ok $first_alone, "$name: the first part is out while the app still runs";
    is $body, "first\nsecond\n", "$name: the streamed body";

    my $errors;
    ($status, $head, $body, $errors) = cgi($command, target => '/die');
    is $status, 500, "$name: die answers 500";
    like $errors, qr{^csgi: 500 for "GET /die HTTP/1\.1": the app raised: the app died on purpose$}m,
        "$name: the die is logged with the request line";
}

# ---- FastCGI: csgi-fcgi --psgi behind Apache mod_fcgid.
SKIP: {
    my $why = ApacheFcgid->available;
    skip $why, 1 if $why;
    my $script = "#!/bin/sh\nexec $fcgi --psgi $app\n";
    $script = "#!/bin/sh\nPERL5LIB=$ENV{PERL5LIB} exec $fcgi --psgi $app\n" if defined $ENV{PERL5LIB};
    my $apache = ApacheFcgid->start('' => $script, '/app' => $script);
    my $base = 'http://127.0.0.1:' . $apache->port;
    my $http = HTTP::Tiny->new(timeout => 20);

    for my $mount ('', '/app') {
        my $name = "mod_fcgid at '$mount/'";
        my $r = $http->get("$base$mount/env?a=1&b=%20", { headers => { 'X-PSGI-Test' => 'yes' } });
        is $r->{status}, 200, "$name: env" or diag $r->{content}, $apache->error_log;
        my %env = $r->{content} =~ /^([^=\n]+)=(.*)$/mg;
        is $env{SCRIPT_NAME}, $mount, "$name: SCRIPT_NAME is the directory of the .htaccess";
        is $env{PATH_INFO}, '/env', "$name: PATH_INFO";
        is $env{QUERY_STRING}, 'a=1&b=%20', "$name: QUERY_STRING";
        is $env{REQUEST_URI}, "$mount/env?a=1&b=%20", "$name: REQUEST_URI";
        is $env{HTTP_X_PSGI_TEST}, 'yes', "$name: the request's header fields";
        is $env{io}, 0, "$name: no psgix.io";
    }

    my $payload = join '', map { chr(($_ * 7) % 256) } 0 .. 99_999;
    my $r = $http->post("$base/echo", { content => $payload, headers => { 'Content-Type' => 'application/octet-stream' } });
    ok $r->{status} == 200 && $r->{content} eq $payload, 'mod_fcgid: the request body comes back unchanged';

    # The first part must reach the client through Apache while the app waits for the flag file.
    my $flag = "$dir/fcgi-stream";
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $apache->port, Timeout => 20) or die $!;
    print $sock "GET /stream-wait?$flag HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    my $got = '';
    my $select = IO::Select->new($sock);
    my $deadline = time + 20;
    while ($got !~ /first\n/ && time < $deadline) {
        next unless $select->can_read(1);
        sysread($sock, my $chunk, 65536) or last;
        $got .= $chunk;
    }
    like $got, qr{^HTTP/1\.1 200 .*first\n}s, 'mod_fcgid: the first part is out while the app still runs';
    open my $touch, '>', $flag or die $!;
    close $touch;
    while (time < $deadline && $select->can_read(1)) { sysread($sock, my $chunk, 65536) or last; $got .= $chunk }
    like $got, qr/second\n/, 'mod_fcgid: the rest of the streamed body';

    $r = $http->get("$base/die");
    is $r->{status}, 500, 'mod_fcgid: die answers 500';
    is $http->get("$base/env")->{status}, 200, 'mod_fcgid: still serving after the die';
    $apache->stop;
    like $apache->error_log, qr{csgi: 500 for "GET /die HTTP/1\.1": the app raised: the app died on purpose},
        'mod_fcgid: the die is in the error log with the request line';
}

done_testing;
