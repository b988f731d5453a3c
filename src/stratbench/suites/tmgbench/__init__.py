"""TMGBench: the 144 Robinson–Goforth 2×2 games (classic and story settings, atomic and complex forms)."""
