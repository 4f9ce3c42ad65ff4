import tinycolor from 'tinycolor2';
const c = tinycolor('#f0a');
print(c.toRgbString() + ' ' + c.lighten(10).toHexString() + ' ' + tinycolor.readability('#000', '#fff') + ' ' + c.isDark());
