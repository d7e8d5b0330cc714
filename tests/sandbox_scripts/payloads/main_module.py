import sys

main = sys.modules["__main__"]
print("MAIN", main.__name__, type(main.__loader__).__name__, main.__spec__ is not None,
      main.__file__.endswith("harness.py"))
