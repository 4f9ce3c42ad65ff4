print('throws evaluated');
throw new Error('boom');
