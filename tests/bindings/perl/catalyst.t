# The Catalyst differential: the application catalyst.pl generates (tests/bindings/perl/catalyst, trimmed to
# Debian's packages) answers the same requests identically under Starman, under csgi serve --psgi, and
# under csgi-fcgi --psgi behind Apache mod_fcgid from a .htaccess (the shared-hosting setup): the status,
# the fields an app decides (Content-Type, Location with the server's own base URL taken out, X-Catalyst)
# and the body, for a page, a form (GET and POST), an upload, a redirect, a static file (GET and HEAD), a
# 404, a 400 and an action that dies.
use strict;
use warnings;
use File::Temp qw(tempdir);
use FindBin;
use lib $FindBin::Bin;
use HTTP::Tiny;
use POSIX ();
use Test::More;
use Test::TCP qw(empty_port wait_port);
use ApacheFcgid;

my ($csgi, $fcgi) = @ENV{qw(CSGI_PROGRAM CSGI_FCGI_PROGRAM)};
plan skip_all => 'CSGI_PROGRAM and CSGI_FCGI_PROGRAM are not set' unless $csgi && $fcgi;
plan skip_all => 'Catalyst is not installed (libcatalyst-perl)' unless eval { require Catalyst; 1 };
my ($starman) = grep { -x } map { "$_/starman" } split /:/, $ENV{PATH};
plan skip_all => 'starman is not installed' unless $starman;
my $why = ApacheFcgid->available;
plan skip_all => $why if $why;

my $app_dir = "$FindBin::Bin/catalyst";
my $psgi = "$app_dir/diffapp.psgi";
my $perl5lib = join ':', "$app_dir/lib", grep { defined } $ENV{PERL5LIB};
my $dir = tempdir(CLEANUP => 1);

# A server of ours in a child process, its output in $dir/$name.log; returns its pid.
sub spawn {
    my ($name, @command) = @_;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open STDOUT, '>', "$dir/$name.log";
        open STDERR, '>&', \*STDOUT;
        local $ENV{PERL5LIB} = $perl5lib;
        { exec { $command[0] } @command }
        POSIX::_exit(127);
    }
    return $pid;
}

my $starman_port = empty_port();
my $starman_pid = spawn('starman', $starman, '--workers', 1, '--listen', "127.0.0.1:$starman_port", $psgi);
my $csgi_port = empty_port();
my $csgi_pid = spawn('csgi', $csgi, 'serve', '--psgi', $psgi, '--listen', "127.0.0.1:$csgi_port");
my $apache = ApacheFcgid->start('' => "#!/bin/sh\nPERL5LIB=$perl5lib exec $fcgi --psgi $psgi\n");
for my $port ($starman_port, $csgi_port) {
    next if eval { wait_port({ host => '127.0.0.1', port => $port, max_wait => 30 }) };
    kill 'TERM', $starman_pid, $csgi_pid;
    BAIL_OUT("a server did not start: " . join '', map { `cat $dir/$_.log` } 'starman', 'csgi');
}

my $upload = join '', map { chr(($_ * 31 + 7) % 256) } 0 .. 20_000;
my $boundary = 'xYzBoundary';
my $multipart = join "\r\n", "--$boundary", 'Content-Disposition: form-data; name="note"', '', 'a note',
    "--$boundary", 'Content-Disposition: form-data; name="file"; filename="data.bin"',
    'Content-Type: application/octet-stream', '', $upload, "--$boundary--", '';
my @requests = (
    ['GET', '/'],
    ['GET', '/form?x=1&y=%C3%A9&z=a+b'],
    ['POST', '/form?q=2', 'application/x-www-form-urlencoded', 'a=1&b=%C3%A9t%C3%A9&c=x+y&empty='],
    ['POST', '/upload', "multipart/form-data; boundary=$boundary", $multipart],
    ['POST', '/upload', 'application/x-www-form-urlencoded', 'note=no+file'],
    ['GET', '/redirect'],
    ['GET', '/static/lines.txt'],
    ['HEAD', '/static/lines.txt'],
    ['GET', '/static/../diffapp.psgi'],
    ['GET', '/no/such/page'],
    ['GET', '/broken'],
);

# What an app decides of its answer, the server's own base URL taken out.
sub answers {
    my $port = shift;
    my $http = HTTP::Tiny->new(timeout => 30, max_redirect => 0);
    my $base = "http://127.0.0.1:$port";
    my @out;
    for my $req (@requests) {
        my ($method, $path, $type, $content) = @$req;
        my %options = (headers => { $type ? ('Content-Type' => $type) : () });
        $options{content} = $content if defined $content;
        my $r = $http->request($method, "$base$path", \%options);
        my $text = join "\n", "status $r->{status}",
            map({ my $v = $r->{headers}{$_}; defined $v ? "$_: " . (ref $v ? join(', ', @$v) : $v) : () }
                qw(content-type location x-catalyst)),
            '', defined $r->{content} ? $r->{content} : '';
        $text =~ s/\Q$base\E/BASE/g;
        push @out, $text;
    }
    return \@out;
}

my $reference = answers($starman_port);
like $reference->[0], qr/^status 200\n.*Catalyst/s, 'Starman serves the welcome page';
like $reference->[5], qr{^status 302\n.*location: BASE/form\?from=redirect}s, 'Starman: the redirect';
for my $server (['csgi serve --psgi', $csgi_port], ['csgi-fcgi under Apache mod_fcgid', $apache->port]) {
    my ($name, $port) = @$server;
    my $got = answers($port);
    for my $i (0 .. $#requests) {
        is $got->[$i], $reference->[$i], "$name: $requests[$i][0] $requests[$i][1] as under Starman";
    }
}

kill 'TERM', $starman_pid, $csgi_pid;
waitpid $_, 0 for $starman_pid, $csgi_pid;
$apache->stop;
like $apache->error_log, qr/the Catalyst action died on purpose/, "mod_fcgid: the app's error reaches Apache's log";
done_testing;
