build-dev/obj/sim/nic/sw_ep.o: sim/nic/sw_ep.c sim/nic/../pool.h \
 sim/nic/../stats.h sim/nic/../util.h sim/nic/sw_impl.h sim/nic/sw.h \
 sim/nic/nic.h sim/nic/../engine.h sim/nic/cassini.h
sim/nic/../pool.h:
sim/nic/../stats.h:
sim/nic/../util.h:
sim/nic/sw_impl.h:
sim/nic/sw.h:
sim/nic/nic.h:
sim/nic/../engine.h:
sim/nic/cassini.h:
