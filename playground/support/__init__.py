"""Qt-free helpers every layer may use: whether a display can be opened, freeing big results
off the GUI thread, and preparing heatmap previews on a worker thread."""
