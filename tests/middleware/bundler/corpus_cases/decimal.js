import Decimal from 'decimal.js';
print(new Decimal('0.1').plus('0.2').toString() + ' ' + new Decimal(2).sqrt().toFixed(30) + ' ' + Decimal.exp(1).toSignificantDigits(20));
