export default class { constructor() { this.x = 'x'; } }
