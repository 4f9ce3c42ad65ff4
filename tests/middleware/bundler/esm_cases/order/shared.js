print('shared (once)');
