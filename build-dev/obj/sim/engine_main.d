build-dev/obj/sim/engine_main.o: sim/engine_main.c sim/scenario.h \
 sim/engine.h
sim/scenario.h:
sim/engine.h:
