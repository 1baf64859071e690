build-dev/obj/sim/params.o: sim/params.c sim/params.h sim/cfg.h \
 sim/util.h
sim/params.h:
sim/cfg.h:
sim/util.h:
