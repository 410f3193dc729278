# Finding what is wrong: comparing against references (check), profiles (profile), compute-sanitizer runs (sanitize).
