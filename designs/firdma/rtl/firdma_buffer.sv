// firdma input buffer: a FIFO of FIFO_DEPTH bus beats (DATA_W bits) in firdma_mem, a two-entry
// output queue that hides the memory's read latency, and an unpacker that hands out the LEN
// samples one at a time (lanes past sample LEN-1 in the last beat are dropped).
`default_nettype none
module firdma_buffer #(
    parameter int DATA_W = 32,
    parameter int FIFO_DEPTH = 512,
    parameter logic [39:0] MEM_STYLE = "flop"
) (
    input  wire              clk,
    input  wire              rst_n,
    input  wire              flush,       // pulse at job start: empty everything
    input  wire [15:0]       len,
    input  wire              push_valid,
    input  wire [DATA_W-1:0] push_data,
    output wire              push_ready,
    output wire              s_valid,
    output wire [15:0]       s_data,
    input  wire              s_ready
);
    localparam int LANES = DATA_W / 16;
    localparam int AW = $clog2(FIFO_DEPTH);
    localparam int CW = $clog2(FIFO_DEPTH + 1);
    localparam int LW = (LANES > 1) ? $clog2(LANES) : 1;

    reg [AW-1:0] wptr, rptr;
    reg [CW-1:0] mem_count;    // beats stored in the memory, not yet read out
    reg          rd_inflight;  // a memory read issued last cycle; its data arrives now
    wire [DATA_W-1:0] mem_rdata;

    // Two-entry output queue.
    reg [DATA_W-1:0] q_data [2];
    reg              q_wr, q_rd;
    reg [1:0]        q_count;

    // Unpacker state.
    reg [LW-1:0] lane;
    reg [15:0]   sent;

    wire q_pop;
    assign push_ready = (mem_count != CW'(FIFO_DEPTH));
    wire do_write = push_valid & push_ready;
    // Issue a read only if the queue will have room when its data arrives next cycle.
    wire do_read = (mem_count != '0) & ({1'b0, q_count} + {2'b0, rd_inflight} <= 3'd1 + {2'b0, q_pop});

    firdma_mem #(.W(DATA_W), .DEPTH(FIFO_DEPTH), .MEM_STYLE(MEM_STYLE)) u_mem (
        .clk(clk), .we(do_write), .waddr(wptr), .wdata(push_data),
        .re(do_read), .raddr(rptr), .rdata(mem_rdata)
    );

    wire [DATA_W-1:0] head = q_data[q_rd];
    assign s_valid = (q_count != 2'd0) & (sent != len);
    assign s_data = head[lane*16 +: 16];
    wire s_fire = s_valid & s_ready;
    assign q_pop = s_fire & ((lane == LW'(LANES - 1)) | (sent + 16'd1 == len));

    always_ff @(posedge clk) begin
        if (!rst_n || flush) begin
            wptr        <= '0;
            rptr        <= '0;
            mem_count   <= '0;
            rd_inflight <= 1'b0;
            q_wr        <= 1'b0;
            q_rd        <= 1'b0;
            q_count     <= 2'd0;
            lane        <= '0;
            sent        <= 16'd0;
        end else begin
            if (do_write) wptr <= wptr + 1'b1;
            if (do_read) rptr <= rptr + 1'b1;
            mem_count <= mem_count + CW'(do_write) - CW'(do_read);
            rd_inflight <= do_read;
            if (rd_inflight) begin
                q_data[q_wr] <= mem_rdata;
                q_wr <= ~q_wr;
            end
            if (q_pop) q_rd <= ~q_rd;
            q_count <= q_count + {1'b0, rd_inflight} - {1'b0, q_pop};
            if (s_fire) begin
                sent <= sent + 16'd1;
                lane <= q_pop ? '0 : lane + 1'b1;
            end
        end
    end
endmodule
`default_nettype wire
