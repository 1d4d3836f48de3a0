"""Programs sent to nodes and run there by their own `python3`: standard library only,
Python 3.8 and up (a test holds every module here to both). Each is read as source
(`Path(module.__file__).read_text()`) and sent; none is imported on a node."""
