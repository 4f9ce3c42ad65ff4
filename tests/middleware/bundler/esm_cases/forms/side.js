globalThis.sideRan = true;
