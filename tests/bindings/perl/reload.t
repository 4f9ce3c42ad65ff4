# csgi serve --psgi APP.psgi --reload: a change to a .pm file under the current directory starts new
# workers that load the app afresh; a change that does not compile leaves the old ones serving.
use strict;
use warnings;
use Cwd qw(getcwd);
use File::Temp qw(tempdir);
use HTTP::Tiny;
use Test::More;
use Test::TCP qw(test_tcp);
use Time::HiRes qw(sleep);

my $csgi = $ENV{CSGI_PROGRAM} or plan skip_all => 'CSGI_PROGRAM (the csgi program) is not set';
my $dir = tempdir(CLEANUP => 1);
mkdir "$dir/lib" or die $!;
sub greet { my $body = shift; open my $f, '>', "$dir/lib/Greet.pm" or die $!; print $f "package Greet; $body 1;\n"; close $f }
greet('sub word { "one" }');
open my $app, '>', "$dir/app.psgi" or die $!;
print $app "use lib 'lib'; use Greet; sub { [200, ['Content-Type' => 'text/plain'], [Greet::word()]] };\n";
close $app;

test_tcp(
    server => sub {
        my $port = shift;
        chdir $dir or die $!;
        open STDERR, '>', "$dir/errors.log" or die $!;
        exec $csgi, 'serve', '--psgi', 'app.psgi', '--reload', '--listen', "127.0.0.1:$port";
        die "exec $csgi: $!";
    },
    client => sub {
        my $port = shift;
        my $http = HTTP::Tiny->new(timeout => 5, keep_alive => 0);
        my $word = sub { my $r = $http->get("http://127.0.0.1:$port/"); $r->{success} ? $r->{content} : '' };
        # Polls for at most 10 s (the master waits 300 ms without changes before it starts workers).
        my $eventually = sub {
            my $want = shift;
            for (1 .. 100) { return 1 if $word->() eq $want; sleep 0.1 }
            return 0;
        };
        ok $eventually->('one'), 'the app answers';
        greet('sub word { "two" }');
        ok $eventually->('two'), 'a changed .pm file is loaded by new workers';
        greet('sub word { "three" ');
        my $log = sub { open my $f, '<', "$dir/errors.log" or return ''; local $/; <$f> };
        my $failed = 0;
        for (1 .. 100) { last if ($failed = $log->() =~ /reload failed/); sleep 0.1 }
        ok $failed, 'a .pm file that does not compile fails the reload';
        is $word->(), 'two', 'and the old workers keep serving';
    },
);
done_testing;
