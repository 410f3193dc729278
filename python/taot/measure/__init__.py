# Measuring built libraries: bench files, timing and reports (bench), and the tuner (tune).
