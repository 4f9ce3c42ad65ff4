export default function () { return 'called'; }
