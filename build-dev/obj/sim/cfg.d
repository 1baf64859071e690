build-dev/obj/sim/cfg.o: sim/cfg.c sim/cfg.h sim/util.h
sim/cfg.h:
sim/util.h:
