print('c');
