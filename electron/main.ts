// Placeholder until the Electron shell lands.
