use strict;
use warnings;

use DiffApp;

my $app = DiffApp->apply_default_middlewares(DiffApp->psgi_app);
$app;

