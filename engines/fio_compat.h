/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The differences between the fio releases the engine builds against, in
 * one place. Include after fio.h.
 *
 * Supported: fio 3.33 (Debian 12, the default) to 3.42. CI builds the fio in
 * Debian unstable (scripts/fio-upstream.sh) and runs the integration suite
 * under it. Everything else the engine uses from fio has the same name,
 * type and meaning in 3.33 and 3.42: the thread_data, thread_options,
 * io_u and fio_file fields it reads, add_file, get_start_offset,
 * utime_since_now, fio_fill_issue_time, io_u_queued, io_u_mark_submit,
 * fio_ro_check, td_verror, log_err, dprint, the FIO_* engine flags,
 * struct fio_option and the ioengine_ops hooks it sets (only
 * FIO_IOOPS_VERSION changes, and the engine takes it from the tree).
 *
 * TORUS_FIO_VERSION_MAJOR and _MINOR come from the tree's FIO-VERSION-FILE
 * (engines/meson.build).
 */
#ifndef TORUS_FIO_COMPAT_H
#define TORUS_FIO_COMPAT_H

#ifndef for_each_td
#error "include fio.h before fio_compat.h"
#endif
#if !defined(TORUS_FIO_VERSION_MAJOR) || !defined(TORUS_FIO_VERSION_MINOR)
#error "TORUS_FIO_VERSION_MAJOR and TORUS_FIO_VERSION_MINOR must give the fio version built against"
#endif

#define TORUS_FIO_AT_LEAST(major, minor)				\
	(TORUS_FIO_VERSION_MAJOR > (major) ||				\
	 (TORUS_FIO_VERSION_MAJOR == (major) && TORUS_FIO_VERSION_MINOR >= (minor)))

/*
 * Every job's thread_data:
 *
 *	torus_for_each_td(td) {
 *		... td is a struct thread_data * ...
 *	} torus_end_for_each();
 *
 * fio 3.34 (commit "Refactor for_each_td() to catch inappropriate td ptr
 * reuse") made for_each_td() declare its own pointer and index, take the
 * pointer's name only and need end_for_each() after the body; before, it
 * took a declared pointer and an int index and was a plain for statement.
 * end_for_each is defined exactly when the new form is, which also covers
 * trees between releases.
 */
#ifdef end_for_each
#define torus_for_each_td(td)	for_each_td(td)
#define torus_end_for_each()	end_for_each()
#else
#define torus_for_each_td(td)				\
	{						\
		struct thread_data *td;			\
		int torus_td_index_;			\
		for_each_td(td, torus_td_index_)
#define torus_end_for_each()	}
#endif

/*
 * fio 3.42 renamed in_ramp_time() to in_ramp_period() (ramp_size= can now
 * end the ramp too), with the same meaning: true while the job ramps up,
 * when fio's runtime clock does not run. Keep the old name.
 */
#if TORUS_FIO_AT_LEAST(3, 42)
static inline bool in_ramp_time(struct thread_data *td)
{
	return in_ramp_period(td);
}
#endif

#endif /* TORUS_FIO_COMPAT_H */
