build-dev/obj/sim/nic/sw_env.o: sim/nic/sw_env.c sim/nic/../model.h \
 sim/nic/../cfg.h sim/nic/../engine.h sim/nic/../params.h \
 sim/nic/../util.h sim/nic/sw_impl.h sim/nic/sw.h sim/nic/nic.h \
 sim/nic/../engine.h sim/nic/cassini.h
sim/nic/../model.h:
sim/nic/../cfg.h:
sim/nic/../engine.h:
sim/nic/../params.h:
sim/nic/../util.h:
sim/nic/sw_impl.h:
sim/nic/sw.h:
sim/nic/nic.h:
sim/nic/../engine.h:
sim/nic/cassini.h:
